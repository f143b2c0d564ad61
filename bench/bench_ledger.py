"""Resolve and recall latency on a PostgreSQL ledger holding a million facts with evidence.

Needs ``DATABASE_URL=postgres://…``. The benchmark creates its own throwaway database
(Django's test database, ``test_<name>``), loads it with COPY, measures requests through
the whole stack (URL routing, Bearer auth, DRF, selectors, byte checks, the audit write)
with Django's in-process client, and drops the database at the end.

Environment: ``BENCH_LEDGER_FACTS`` (default 1,000,000), ``BENCH_LEDGER_SAMPLES`` (2,000).
"""

from __future__ import annotations

import hashlib
import os
import random
import secrets
import statistics
import time
import uuid
from datetime import UTC, datetime, timedelta

FACTS_PER_SUBJECT = 10  # 3 lives_in (a supersession chain) and 7 likes
CITIES = ["Dublin", "Cork", "Galway", "Lisbon", "Oslo", "Kraków", "Zürich", "東京"]


def _setup_django():
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "attest.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    # PostgreSQL wants a SECRET_KEY every host shares; this process is the only host.
    os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))
    # Latency, not the per-credential budget, is under test.
    os.environ.setdefault("ATTEST_LEDGER_RATE", "100000000/m")
    import django

    django.setup()


def _rows(project_id: int, generation_id: int, subjects: list[int], now: datetime):
    """Yield (table, row) tuples for every fact, version, observation and evidence row."""
    version = "bench"
    for subject_id in subjects:
        facts = []
        years = [2016, 2019, 2023]
        for index in range(FACTS_PER_SUBJECT):
            if index < 3:
                city = CITIES[(subject_id + index) % len(CITIES)]
                text = f"Hello! I moved to {city} in {years[index]}. Settling in well."
                quote = f"I moved to {city} in {years[index]}"
                facts.append(
                    ("lives_in", True, city, text, quote, datetime(years[index], 1, 1, tzinfo=UTC))
                )
            else:
                thing = f"hobby number {subject_id * 7 + index}"
                text = f"I like {thing}. That is all."
                quote = f"I like {thing}"
                facts.append(("likes", False, thing, text, quote, None))
        ids = [uuid.uuid4() for _ in facts]
        obs_ids = [uuid.uuid4() for _ in facts]
        for index, (predicate, functional, value, text, quote, start) in enumerate(facts):
            occurred = now - timedelta(days=400 - index)
            content = text.encode()
            byte_start = content.index(quote.encode())
            byte_end = byte_start + len(quote.encode())
            yield (
                "observation",
                (
                    obs_ids[index],
                    project_id,
                    subject_id,
                    f"s{subject_id}-m{index}",
                    "user",
                    occurred,
                    now,
                    content,
                    hashlib.sha256(content).hexdigest(),
                    "",
                    index,
                ),
            )
            yield (
                "fact",
                (
                    ids[index],
                    project_id,
                    subject_id,
                    predicate,
                    functional,
                    value,
                    value.casefold(),
                    quote + ".",
                    "user",
                    generation_id,
                    now,
                ),
            )
            valid_from = start or occurred
            valid_until = superseded_by = source = None
            status = "current"
            if functional and index < 2:
                valid_until = facts[index + 1][5]
                superseded_by, source, status = (
                    ids[index + 1],
                    obs_ids[index + 1],
                    "validity_closed",
                )
            yield (
                "version",
                (
                    ids[index],
                    1,
                    project_id,
                    subject_id,
                    predicate,
                    functional,
                    valid_from,
                    valid_until,
                    "year" if start else "instant",
                    now,
                    status,
                    superseded_by,
                    source,
                ),
            )
            yield (
                "evidence",
                (
                    project_id,
                    ids[index],
                    obs_ids[index],
                    byte_start,
                    byte_end,
                    hashlib.sha256(content[byte_start:byte_end]).hexdigest(),
                    version,
                    "",
                    valid_from,
                    "year" if start else "instant",
                    now,
                ),
            )
        yield ("end", None)


COPY = {
    "observation": "COPY citations_observation (id, project_id, subject_id, message_id, role, "
    "occurred_at, received_at, content, content_sha256, session, ordinal) FROM STDIN",
    "fact": "COPY citations_fact (id, project_id, subject_id, predicate, functional, value, "
    "value_key, statement, source_role, generation_id, created_at) FROM STDIN",
    "version": "COPY citations_factversion (fact_id, seq, project_id, subject_id, predicate, "
    "functional, valid_from, valid_until, valid_precision, known_from, status, superseded_by_id, "
    "supersession_source_observation_id, valid_from_inclusive, valid_until_inclusive, "
    "known_from_inclusive, known_until_inclusive) FROM STDIN",
    "evidence": "COPY citations_evidence (project_id, fact_id, observation_id, byte_start, "
    "byte_end, quote_sha256, extractor_version, authored_by, asserted_from, asserted_precision, "
    "created_at) FROM STDIN",
}


def _load(total_facts: int) -> tuple[object, str, list[str], list[str], float]:
    from django.db import connection
    from django.utils import timezone

    from citations.models import Generation, Subject
    from citations.services import project_create

    started = time.perf_counter()
    project, token = project_create(name="bench-ledger")
    generation = Generation.objects.create(project=project, kind="ingest", extractor_version="b")
    n_subjects = total_facts // FACTS_PER_SUBJECT
    Subject.objects.bulk_create(
        [Subject(project=project, external_id=f"subject-{i}") for i in range(n_subjects)],
        batch_size=10_000,
    )
    subject_ids = list(
        Subject.objects.filter(project=project).order_by("pk").values_list("pk", flat=True)
    )
    now = timezone.now()
    connection.ensure_connection()
    raw = connection.connection
    buffers: dict[str, list[tuple]] = {name: [] for name in COPY}
    sample_facts: list[str] = []

    def flush() -> None:
        with raw.cursor() as cursor:
            for name in ("observation", "fact", "version", "evidence"):
                with cursor.copy(COPY[name]) as copy:
                    for row in buffers[name]:
                        if name == "version":
                            row = (*row, True, False, True, False)
                        copy.write_row(row)
                buffers[name].clear()

    with connection.cursor() as cursor:
        cursor.execute("SET synchronous_commit TO off")
    for table, row in _rows(project.pk, generation.pk, subject_ids, now):
        if table == "end":
            # Only between subjects: a supersession link must find its fact in the same COPY.
            if len(buffers["fact"]) >= 50_000:
                flush()
            continue
        buffers[table].append(row)
        if table == "fact" and random.random() < 0.01:
            sample_facts.append(str(row[0]))
    flush()
    with connection.cursor() as cursor:
        # Requests are measured with durable commits, as in production.
        cursor.execute("SET synchronous_commit TO on")
        for table in ("observation", "fact", "factversion", "evidence", "subject"):
            cursor.execute(f"ANALYZE citations_{table}")
    subjects = [f"subject-{i}" for i in range(n_subjects)]
    return project, token, sample_facts, subjects, time.perf_counter() - started


def _measure(call, samples: int) -> tuple[float, float]:
    timings = []
    for _ in range(samples):
        started = time.perf_counter()
        call()
        timings.append((time.perf_counter() - started) * 1000)
    timings.sort()
    return statistics.median(timings), timings[int(len(timings) * 0.99) - 1]


def main() -> None:
    _setup_django()
    from django.db import connection
    from django.test.utils import setup_test_environment
    from rest_framework.test import APIClient

    if connection.vendor != "postgresql":
        print("bench_ledger needs DATABASE_URL=postgres://…; skipped.")
        return
    total = int(os.environ.get("BENCH_LEDGER_FACTS", "1000000"))
    samples = int(os.environ.get("BENCH_LEDGER_SAMPLES", "2000"))
    setup_test_environment()
    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    try:
        project, token, fact_ids, subjects, load_seconds = _load(total)
        from citations.models import Evidence, Fact

        facts = Fact.objects.filter(project=project).count()
        evidence = Evidence.objects.filter(project=project).count()
        print(f"loaded {facts:,} facts, {evidence:,} evidence rows in {load_seconds:.0f} s")
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
        rng = random.Random(7)

        def resolve():
            response = client.post(
                "/v1/citations/resolve", {"id": rng.choice(fact_ids)}, format="json"
            )
            assert response.status_code == 200, response.content

        def recall():
            response = client.post("/v1/recall", {"subject": rng.choice(subjects)}, format="json")
            assert response.status_code == 200 and len(response.json()["facts"]) == 8

        def recall_history():
            body = {"subject": rng.choice(subjects), "as_of": {"valid_at": "2020-06-01T00:00:00Z"}}
            response = client.post("/v1/recall", body, format="json")
            assert response.status_code == 200 and response.json()["facts"]

        for name, call in [
            ("resolve", resolve),
            ("recall", recall),
            ("recall as_of", recall_history),
        ]:
            for _ in range(50):  # warm caches and connections
                call()
            median, p99 = _measure(call, samples)
            print(f"{name:14s} median {median:6.2f} ms   p99 {p99:6.2f} ms   ({samples} requests)")
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)


if __name__ == "__main__":
    main()
