"""Ledger lifecycle at size: subject export (time and peak RSS at two sizes), a project
rebuild, and erasure of a large subject.

By default on a scratch SQLite file; with ``DATABASE_URL=postgres://…`` on that database
(use a throwaway one: the benchmark adds projects to it). Rows are loaded with bulk
inserts whose spans and hashes come from the real extractor, so resolve, export and
rebuild check them as they would check ingested ones. Every measurement goes through
the whole stack in process (URL routing, Bearer auth, DRF, services) except the rebuild,
which is run by the real task worker (``db_worker --batch``) after ``POST /v1/rebuilds``.
Each export runs in a fresh child process, so its peak RSS (VmHWM) is the export's own.

Environment: ``BENCH_EXPORT_FACTS`` (default "25000,100000"), ``BENCH_REBUILD_FACTS``
(100,000, in subjects of 100), ``BENCH_ERASE_MESSAGES`` (10,000), and
``BENCH_LIFECYCLE_PARTS`` (default "export,erasure,rebuild") to run only some.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta

CITIES = ["Dublin", "Cork", "Galway", "Lisbon", "Oslo", "Kraków", "Zürich"]


def _django() -> None:
    os.environ.setdefault("ATTEST_LEDGER_RATE", "100000000/m")
    from bench.setup import django_on_a_scratch_database

    if "BENCH_SCRATCH" in os.environ:  # a child reuses its parent's database
        import django

        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "attest.settings")
        django.setup()
        return
    os.environ["BENCH_SCRATCH"] = django_on_a_scratch_database("lifecycle", keep_database_url=True)


def _texts(count: int, offset: int = 0) -> list[tuple[str, datetime]]:
    """Messages that each give one fact: mostly likes, every tenth a new home (a chain)."""
    start = datetime(2020, 1, 1, tzinfo=UTC)
    out = []
    for n in range(count):
        at = start + timedelta(minutes=n)
        if n % 10 == 9:
            city = CITIES[(n // 10) % len(CITIES)]
            out.append((f"I live in {city}.", at))
        else:
            out.append((f"I like hobby number {offset + n}. That is all.", at))
    return out


def _load_subject(project, external_id: str, count: int, offset: int = 0) -> None:
    """One subject with ``count`` messages and their facts, as ingestion would store them."""
    from django.db import transaction
    from django.utils import timezone

    from citations.extract.extractor import EXTRACTOR_VERSION, extract
    from citations.models import Evidence, Fact, FactVersion, Generation, Observation, Subject

    now = timezone.now()
    generation, _ = Generation.objects.get_or_create(
        project=project, kind="ingest", extractor_version=EXTRACTOR_VERSION
    )
    subject = Subject.objects.create(project=project, external_id=external_id)
    observations, facts, versions, evidence = [], [], [], []
    open_move = None
    for index, (text, at) in enumerate(_texts(count, offset)):
        content = text.encode()
        (reading,) = extract(text, occurred_at=at)
        observation = Observation(
            project=project,
            subject=subject,
            message_id=f"{external_id}-m{index}",
            role="user",
            occurred_at=at,
            received_at=now,
            content=content,
            content_sha256=hashlib.sha256(content).hexdigest(),
            ordinal=0,
        )
        fact = Fact(
            project=project,
            subject=subject,
            predicate=reading.predicate,
            functional=reading.cardinality == "one",
            value=reading.value,
            value_key=reading.value_key,
            statement=reading.statement,
            source_role="user",
            generation=generation,
            created_at=now,
        )
        version = FactVersion(
            fact=fact,
            seq=1,
            project=project,
            subject=subject,
            predicate=fact.predicate,
            functional=fact.functional,
            valid_from=reading.valid_from,
            valid_precision=reading.valid_precision,
            known_from=now,
            status="current",
        )
        if fact.functional:
            if open_move is not None:
                previous, _ = open_move
                previous.valid_until = reading.valid_from
                previous.superseded_by = fact
                previous.supersession_source_observation = observation
                previous.status = "validity_closed"
            open_move = (version, fact)
        quote = content[reading.byte_start : reading.byte_end]
        observations.append(observation)
        facts.append(fact)
        versions.append(version)
        evidence.append(
            Evidence(
                project=project,
                fact=fact,
                observation=observation,
                byte_start=reading.byte_start,
                byte_end=reading.byte_end,
                quote_sha256=hashlib.sha256(quote).hexdigest(),
                extractor_version=EXTRACTOR_VERSION,
                asserted_from=reading.valid_from,
                asserted_precision=reading.valid_precision,
                created_at=now,
            )
        )
    with transaction.atomic():
        for rows in (observations, facts, versions, evidence):
            type(rows[0]).objects.bulk_create(rows, batch_size=2000)
    # What autovacuum does within a minute of a load this size; measured straight after
    # the bulk insert, PostgreSQL plans for the tables it last saw (a new project with no
    # rows) and the export's evidence join scans every fact of the subject once a row.
    from django.db import connection

    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")


def _project(name: str):
    from citations.services import project_create

    return project_create(name=f"{name}-{time.time_ns()}")


def _client(token: str):
    from django.test import Client

    return Client(HTTP_AUTHORIZATION=f"Bearer {token}")


def _peak_rss_mib() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def export_child(token: str, subject: str) -> None:
    """Run in a fresh process: one export, then print its figures as JSON."""
    _django()
    client = _client(token)
    before = _peak_rss_mib()
    started = time.perf_counter()
    response = client.get(f"/v1/subjects/{subject}/export")
    assert response.status_code == 200, response.status_code
    lines = size = 0
    for chunk in response.streaming_content:
        lines += chunk.count(b"\n")
        size += len(chunk)
    response.close()
    elapsed = time.perf_counter() - started
    end = json.loads(chunk)
    assert end["type"] == "end", end
    print(
        json.dumps(
            {
                "seconds": elapsed,
                "lines": lines,
                "bytes": size,
                "rss_before_mib": before,
                "peak_rss_mib": _peak_rss_mib(),
            }
        )
    )


def bench_export(sizes: list[int]) -> None:
    for size in sizes:
        project, token = _project("bench-export")
        started = time.perf_counter()
        _load_subject(project, "big", size)
        loaded = time.perf_counter() - started
        child = subprocess.run(
            [sys.executable, "-m", "bench.bench_lifecycle", "export-child", token, "big"],
            capture_output=True,
            text=True,
            env=os.environ,
            check=True,
        )
        figures = json.loads(child.stdout.strip().splitlines()[-1])
        print(
            f"export, {size:,} facts ({size:,} messages; loaded in {loaded:.0f} s): "
            f"{figures['seconds']:.1f} s, {figures['lines']:,} lines, "
            f"{figures['bytes'] / 2**20:.1f} MiB; peak RSS {figures['peak_rss_mib']:.0f} MiB "
            f"(Django loaded: {figures['rss_before_mib']:.0f} MiB)",
            flush=True,
        )


def bench_rebuild(total: int) -> None:
    from django.core.management import call_command

    from citations.models import Generation

    project, token = _project("bench-rebuild")
    per_subject = 100
    for n in range(total // per_subject):
        _load_subject(project, f"s{n}", per_subject, offset=n * per_subject)
    client = _client(token)
    started, cpu = time.perf_counter(), time.process_time()
    response = client.post("/v1/rebuilds", {"scope": "project"}, content_type="application/json")
    assert response.status_code == 202, response.content
    call_command("db_worker", "--batch", "--interval", "0", verbosity=0)
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    generation = Generation.objects.get(pk=response.json()["generation"]["id"])
    assert generation.state == "done", generation.state
    print(
        f"project rebuild, {total:,} facts in {total // per_subject:,} subjects: "
        f"{elapsed:.0f} s ({total / elapsed:,.0f} facts/s; this process's CPU {cpu:.0f} s, "
        f"the database server's not counted); retired {generation.retired:,}, "
        f"admitted {generation.admitted:,}; load average {os.getloadavg()[0]:.1f}",
        flush=True,
    )


def bench_erasure(messages: int) -> None:
    project, token = _project("bench-erase")
    _load_subject(project, "leaving", messages)
    client = _client(token)
    started = time.perf_counter()
    response = client.post("/v1/erasures", {"subject": "leaving"}, content_type="application/json")
    elapsed = time.perf_counter() - started
    assert response.status_code == 200, response.content
    erased = response.json()["erased"]
    print(
        f"erasure of a subject with {messages:,} messages: {elapsed:.1f} s "
        f"({erased['observations']:,} messages, {erased['facts']:,} facts erased)",
        flush=True,
    )


def main() -> None:
    _django()
    from django.db import connection

    print(f"database: {connection.vendor}; load average {os.getloadavg()[0]:.1f}", flush=True)
    parts = os.environ.get("BENCH_LIFECYCLE_PARTS", "export,erasure,rebuild").split(",")
    if "export" in parts:
        sizes = [int(s) for s in os.environ.get("BENCH_EXPORT_FACTS", "25000,100000").split(",")]
        bench_export(sizes)
    if "erasure" in parts:
        bench_erasure(int(os.environ.get("BENCH_ERASE_MESSAGES", "10000")))
    if "rebuild" in parts:
        bench_rebuild(int(os.environ.get("BENCH_REBUILD_FACTS", "100000")))


if __name__ == "__main__":
    if sys.argv[1:2] == ["export-child"]:
        export_child(*sys.argv[2:4])
    else:
        main()
