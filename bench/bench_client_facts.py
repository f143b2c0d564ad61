"""Recording a client-extracted fact (one message evidence row) against an authored record.

Both go through the whole stack in process (URL routing, Bearer auth, the rate limit,
DRF, the services, the audit write, the resolve that answers). Each record names its own
subject, so neither grows a timeline; the messages the client quotes are ingested first
and not timed. The client fact has one more lookup (the quoted message) and no message
of its own to store, so the issue's bound is at most 2x the authored record.

By default on a scratch SQLite file; with ``DATABASE_URL=postgres://…`` on that database
(a throwaway one: the benchmark adds a project). ``BENCH_CLIENT_FACTS`` (default 300)
records of each kind, interleaved in rounds so load on the machine hits both alike.
"""

from __future__ import annotations

import os
import statistics
import time


def _django() -> None:
    os.environ.setdefault("ATTEST_LEDGER_RATE", "100000000/m")
    from bench.setup import django_on_a_scratch_database

    django_on_a_scratch_database("client_facts", keep_database_url=True)


def main() -> None:
    _django()
    from django.db import connection
    from django.test import Client

    from citations.services import project_create

    total = int(os.environ.get("BENCH_CLIENT_FACTS", "300"))
    _, token = project_create(name=f"client-facts-{time.time_ns()}")
    client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    declared = client.post(
        "/v1/predicates",
        {"name": "prefers_theme", "cardinality": "one"},
        content_type="application/json",
    )
    assert declared.status_code == 201, declared.content
    text = "Olá — from now on I prefer the dark theme, thanks."
    for n in range(total):
        body = {
            "subject": f"c{n}",
            "messages": [
                {"id": f"m{n}", "role": "user", "text": text, "occurred_at": "2026-03-04T10:00:00Z"}
            ],
        }
        assert (
            client.post("/v1/observations", body, content_type="application/json").status_code
            == 201
        )

    def authored(n):
        return {
            "subject": f"a{n}",
            "predicate": "prefers_theme",
            "statement": "Prefers the dark theme.",
            "value": "dark",
            "authored_by": "support:ana",
        }

    def client_fact(n):
        return {
            "subject": f"c{n}",
            "predicate": "prefers_theme",
            "value": "dark",
            "evidence": [{"message_id": f"m{n}", "quote": "I prefer the dark theme"}],
            "extracted_by": "bench/1",
        }

    timings: dict[str, list[float]] = {"authored": [], "client": []}
    for n in range(total):
        for kind, body in (("authored", authored(n)), ("client", client_fact(n))):
            started = time.perf_counter()
            response = client.post("/v1/facts", body, content_type="application/json")
            timings[kind].append(time.perf_counter() - started)
            assert response.status_code == 201, response.content
    print(
        f"database: {connection.vendor}; {total} records of each kind; "
        f"load {os.getloadavg()[0]:.1f}"
    )
    medians = {}
    for kind, values in timings.items():
        values.sort()
        medians[kind] = statistics.median(values)
        p95 = values[int(len(values) * 0.95) - 1]
        print(f"  {kind:9} median {medians[kind] * 1000:6.2f} ms   p95 {p95 * 1000:6.2f} ms")
    ratio = medians["client"] / medians["authored"]
    print(f"  client / authored (medians): {ratio:.2f}x (bound: 2x)")
    assert ratio <= 2, "a client fact costs more than twice an authored record"


if __name__ == "__main__":
    main()
