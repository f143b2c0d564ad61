"""Ingest throughput through the API: observations/s at 1 and at 100 messages per request.

On PostgreSQL with ``DATABASE_URL=postgres://…`` (the benchmark creates Django's
throwaway test database ``test_<name>`` and drops it at the end), else on a scratch
SQLite file. Requests go through the whole stack in process (URL routing, Bearer auth,
DRF validation, extraction, placement, the audit chain) with Django's test client.

Every message states facts: a like, and every fifth a new home that supersedes the
subject's home, so placement, supersession and evidence are all exercised. Subjects
already hold a history (``BENCH_INGEST_HISTORY`` messages each) before timing starts.

Beside this process's CPU, on a PostgreSQL server on this host, the CPU of the server
process that serves the connection (``/proc/<pg_backend_pid()>/stat``): on a machine
other sessions load, the two CPU figures are what a request costs, where the wall time
is mostly waiting for a core.

Environment: ``BENCH_INGEST_MESSAGES`` (messages per size, default 3,000),
``BENCH_INGEST_SUBJECTS`` (20), ``BENCH_INGEST_HISTORY`` (50), ``BENCH_INGEST_SIZES``
(messages per request, default ``1,100``), ``BENCH_INGEST_ROUNDS`` (timed runs of each
size, one line each, default 1).
"""

from __future__ import annotations

import os
import statistics
import time
from datetime import UTC, datetime, timedelta

CITIES = ["Dublin", "Cork", "Galway", "Lisbon", "Oslo", "Kraków", "Zürich"]


def _setup_django() -> None:
    os.environ.setdefault("ATTEST_LEDGER_RATE", "100000000/m")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        from bench.setup import django_on_a_scratch_database

        django_on_a_scratch_database("ingest")
        return
    from bench.setup import one_host_secret_key

    one_host_secret_key()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "attest.settings")
    import django

    django.setup()


class _Messages:
    """Messages of one subject, a minute apart, each with a fresh ID."""

    def __init__(self, subject: str) -> None:
        self.subject, self.count = subject, 0

    def next(self) -> dict:
        n = self.count
        self.count += 1
        sent = datetime(2020, 1, 1, tzinfo=UTC) + timedelta(minutes=n)
        text = f"I like hobby number {n} of {self.subject}. That is all."
        if n % 5 == 4:
            text += f" I live in {CITIES[n % len(CITIES)]} now."
        return {
            "id": f"{self.subject}-{n}",
            "role": "user",
            "text": text,
            "occurred_at": sent.isoformat(),
        }


def _post(client, subject: _Messages, size: int) -> None:
    body = {"subject": subject.subject, "messages": [subject.next() for _ in range(size)]}
    response = client.post("/v1/observations", body, format="json")
    assert response.status_code == 201, response.content


def _server_cpu() -> float | None:
    """CPU seconds of the PostgreSQL process serving this connection, if on this host."""
    from django.db import connection

    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        [(pid,)] = cursor.fetchall()
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _run(client, subjects: list[_Messages], size: int, total: int) -> None:
    requests = max(1, total // size)
    for n in range(5):  # warm connections and caches
        _post(client, subjects[n % len(subjects)], size)
    timings = []
    server = _server_cpu()
    started, cpu = time.perf_counter(), time.process_time()
    for n in range(requests):
        begun = time.perf_counter()
        _post(client, subjects[n % len(subjects)], size)
        timings.append((time.perf_counter() - begun) * 1000)
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    server_after = _server_cpu()
    timings.sort()
    messages = requests * size
    on_server = ""
    if server is not None and server_after is not None:
        per = (server_after - server) / messages * 1000
        both = cpu / messages * 1000 + per
        on_server = (
            f"; the server's CPU {per:.2f} ms per message (both: {both:.2f} ms, "
            f"{1000 / both:,.0f} observations/s for a client and a server with a core each)"
        )
    print(
        f"{size:3d} message(s) per request: {messages / wall:7,.0f} observations/s "
        f"({messages:,} messages in {requests:,} requests, {wall:.1f} s); per request "
        f"median {statistics.median(timings):.1f} ms, "
        f"p99 {timings[int(len(timings) * 0.99) - 1]:.1f}"
        f" ms; this process's CPU {cpu / messages * 1000:.2f} ms per message{on_server}; "
        f"load average {os.getloadavg()[0]:.1f}",
        flush=True,
    )


def main() -> None:
    _setup_django()
    from django.db import connection
    from rest_framework.test import APIClient

    from citations.services import project_create

    total = int(os.environ.get("BENCH_INGEST_MESSAGES", "3000"))
    n_subjects = int(os.environ.get("BENCH_INGEST_SUBJECTS", "20"))
    history = int(os.environ.get("BENCH_INGEST_HISTORY", "50"))
    old_name = None
    if connection.vendor == "postgresql":
        from django.test.utils import setup_test_environment

        setup_test_environment()
        old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        print(f"database: {connection.vendor}; load average {os.getloadavg()[0]:.1f}", flush=True)
        _, token = project_create(name=f"bench-ingest-{time.time_ns()}")
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
        subjects = [_Messages(f"s{n}") for n in range(n_subjects)]
        for subject in subjects:
            for _ in range(history // 50):
                _post(client, subject, 50)
        sizes = [int(n) for n in os.environ.get("BENCH_INGEST_SIZES", "1,100").split(",")]
        for size in sizes:
            for _ in range(int(os.environ.get("BENCH_INGEST_ROUNDS", "1"))):
                _run(client, subjects, size, total)
    finally:
        if old_name is not None:
            connection.creation.destroy_test_db(old_name, verbosity=0)


if __name__ == "__main__":
    main()
