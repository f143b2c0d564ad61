"""Resolve and recall latency (ranked recall too) on a PostgreSQL ledger of a million facts.

Needs ``DATABASE_URL=postgres://…``. The benchmark creates its own throwaway database
(Django's test database, ``test_<name>``), loads it with COPY (indexes and keys built
after the rows), measures requests through the whole stack (URL routing, Bearer auth, the
rate limit, DRF, selectors, byte checks, the audit write) with Django's in-process client
beside the raw-SQL floor (the same requests' statements replayed through psycopg), and
drops the database at the end. It prints the plan of a ranked recall's full-text search
and checks that it uses the GIN index.

Environment: ``BENCH_LEDGER_FACTS`` (default 1,000,000), ``BENCH_LEDGER_SAMPLES`` (2,000).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import random
import statistics
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

FACTS_PER_SUBJECT = 10  # 3 lives_in (a supersession chain) and 7 likes
CITIES = ["Dublin", "Cork", "Galway", "Lisbon", "Oslo", "Kraków", "Zürich", "東京"]


def _setup_django():
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "attest.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    from bench.setup import one_host_secret_key

    one_host_secret_key()
    # Latency, not the per-credential budget, is under test.
    os.environ.setdefault("ATTEST_LEDGER_RATE", "100000000/m")
    import django

    django.setup()


YEARS = [2016, 2019, 2023]
LOADED_TABLES = ("observation", "fact", "factversion", "evidence")
CHUNK_SUBJECTS = 5_000


def _subject_facts(subject_id: int) -> list[tuple[str, str, str, str, str]]:
    """One subject's ten facts: (predicate, functional, value, message text, quote)."""
    facts = []
    for index in range(FACTS_PER_SUBJECT):
        if index < 3:
            city, year = CITIES[(subject_id + index) % len(CITIES)], YEARS[index]
            text = f"Hello! I moved to {city} in {year}. Settling in well."
            facts.append(("lives_in", "t", city, text, f"I moved to {city} in {year}"))
        else:
            thing = f"hobby number {subject_id * 7 + index}"
            facts.append(("likes", "f", thing, f"I like {thing}. That is all.", f"I like {thing}"))
    return facts


class _Rows:
    """Every loaded table's rows as COPY text, a chunk of subjects at a time.

    Fact and observation IDs are a random prefix of the run and a counter, so a version
    can name the fact that supersedes it before that fact is written, and each table is
    generated on its own without keeping the others in memory.
    """

    def __init__(self, project_id: int, generation_id: int, subject_ids: list[int], now):
        self.subject_ids = subject_ids
        self.restore: dict[str, list[str]] = {}  # each table's indexes and keys, by name
        self.fact_base = self._prefix()
        self.obs_base = self._prefix()
        self.head = f"{project_id}\t"
        self.generation = generation_id
        self.stamp = now.isoformat()
        self.occurred = [
            (now - timedelta(days=400 - i)).isoformat() for i in range(FACTS_PER_SUBJECT)
        ]
        self.starts = [datetime(year, 1, 1, tzinfo=UTC).isoformat() for year in YEARS]

    @staticmethod
    def _prefix() -> str:
        b = uuid.uuid4().hex
        return f"{b[:8]}-{b[8:12]}-{b[12:16]}-{b[16:20]}-"

    def chunks(self, table: str):
        make = getattr(self, f"_{table}")
        for first in range(0, len(self.subject_ids), CHUNK_SUBJECTS):
            lines: list[str] = []
            for position in range(first, min(first + CHUNK_SUBJECTS, len(self.subject_ids))):
                subject_id = self.subject_ids[position]
                number = position * FACTS_PER_SUBJECT
                for index, fact in enumerate(_subject_facts(subject_id)):
                    lines.append(make(subject_id, number + index, index, *fact))
            yield "".join(lines).encode()

    def _valid(self, index: int) -> tuple[str, str]:
        if index < 3:
            return self.starts[index], "year"
        return self.occurred[index], "instant"

    def _observation(self, subject_id, number, index, predicate, functional, value, text, quote):
        content = text.encode()
        return (
            f"{self.obs_base}{number:012x}\t{self.head}{subject_id}\ts{subject_id}-m{index}\t"
            f"user\t{self.occurred[index]}\t{self.stamp}\t\\\\x{content.hex()}\t"
            f"{hashlib.sha256(content).hexdigest()}\t\t{index}\n"
        )

    def _fact(self, subject_id, number, index, predicate, functional, value, text, quote):
        return (
            f"{self.fact_base}{number:012x}\t{self.head}{subject_id}\t{predicate}\t{functional}\t"
            f"{value}\t{value.casefold()}\t{quote}.\tuser\t{self.generation}\t{self.stamp}\n"
        )

    def _factversion(self, subject_id, number, index, predicate, functional, value, text, quote):
        valid_from, precision = self._valid(index)
        if index < 2:  # the next move closes this one's validity and supersedes it
            closing = (
                f"{self.starts[index + 1]}\t{precision}\t{self.stamp}\tvalidity_closed\t"
                f"{self.fact_base}{number + 1:012x}\t{self.obs_base}{number + 1:012x}"
            )
        else:
            closing = f"\\N\t{precision}\t{self.stamp}\tcurrent\t\\N\t\\N"
        return (
            f"{self.fact_base}{number:012x}\t1\t{self.head}{subject_id}\t{predicate}\t"
            f"{functional}\t{valid_from}\t{closing}\tt\tf\tt\tf\n"
        )

    def _evidence(self, subject_id, number, index, predicate, functional, value, text, quote):
        content, quoted = text.encode(), quote.encode()
        start = content.index(quoted)
        valid_from, precision = self._valid(index)
        return (
            f"{self.head}{self.fact_base}{number:012x}\t{self.obs_base}{number:012x}\t{start}\t"
            f"{start + len(quoted)}\t{hashlib.sha256(quoted).hexdigest()}\tbench\t\t"
            f"{valid_from}\t{precision}\t{self.stamp}\tmessage\n"
        )


COPY = {
    "observation": "COPY citations_observation (id, project_id, subject_id, message_id, role, "
    "occurred_at, received_at, content, content_sha256, session, ordinal) FROM STDIN",
    "fact": "COPY citations_fact (id, project_id, subject_id, predicate, functional, value, "
    "value_key, statement, source_role, generation_id, created_at) FROM STDIN",
    "factversion": "COPY citations_factversion (fact_id, seq, project_id, subject_id, predicate, "
    "functional, valid_from, valid_until, valid_precision, known_from, status, superseded_by_id, "
    "supersession_source_observation_id, valid_from_inclusive, valid_until_inclusive, "
    "known_from_inclusive, known_until_inclusive) FROM STDIN",
    "evidence": "COPY citations_evidence (project_id, fact_id, observation_id, byte_start, "
    "byte_end, quote_sha256, extractor_version, authored_by, asserted_from, asserted_precision, "
    "created_at, kind) FROM STDIN",
}


def _schema(cursor, tables: list[str]) -> list[tuple]:
    """The tables' constraints (with whether they were checked) and indexes, as PostgreSQL
    renders them: equal before and after the load, or the load changed the schema."""
    oids = "ARRAY[" + ",".join(f"'{t}'::regclass" for t in tables) + "]"
    cursor.execute(
        "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid), convalidated "
        f"FROM pg_constraint WHERE conrelid = ANY({oids}) OR confrelid = ANY({oids}) "
        "UNION ALL SELECT indrelid::regclass::text, indexrelid::regclass::text, "
        f"pg_get_indexdef(indexrelid), indisvalid FROM pg_index WHERE indrelid = ANY({oids}) "
        "ORDER BY 1, 2, 3, 4"
    )
    return cursor.fetchall()


def _lift_indexes(cursor, tables: list[str]) -> list[str]:
    """Drop the tables' indexes and key, unique, exclusion and foreign-key constraints
    (those of other tables pointing at them too); return the DDL that puts them back.

    As pg_restore does it: rows first, then each index built once and each foreign key
    checked once with a join, instead of row by row. The DDL is PostgreSQL's own
    rendering of what the migrations made, so the schema comes back unchanged.
    """
    oids = "ARRAY[" + ",".join(f"'{t}'::regclass" for t in tables) + "]"
    cursor.execute(
        "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid), contype "
        f"FROM pg_constraint WHERE contype IN ('p', 'u', 'x', 'f') "
        f"AND (conrelid = ANY({oids}) OR confrelid = ANY({oids}))"
    )
    constraints = cursor.fetchall()
    cursor.execute(
        "SELECT indexrelid::regclass::text, indrelid::regclass::text, pg_get_indexdef(indexrelid) "
        "FROM pg_index i "
        f"WHERE indrelid = ANY({oids}) AND NOT EXISTS (SELECT 1 FROM pg_constraint c "
        "WHERE c.conindid = i.indexrelid AND c.contype IN ('p', 'u', 'x'))"
    )
    indexes = cursor.fetchall()
    keys = [c for c in constraints if c[3] != "f"]
    foreign = [c for c in constraints if c[3] == "f"]
    for table, name, _, _ in foreign + keys:
        cursor.execute(f'ALTER TABLE {table} DROP CONSTRAINT "{name}"')
    for name, _, _ in indexes:
        cursor.execute(f"DROP INDEX {name}")
    per_table: dict[str, list[str]] = {table: [] for table in tables}
    for _, table, definition in indexes:
        per_table[table].append(definition)
    for table, name, definition, _ in keys:
        per_table[table].append(f'ALTER TABLE {table} ADD CONSTRAINT "{name}" {definition}')
    foreign_ddl = [f'ALTER TABLE {t} ADD CONSTRAINT "{n}" {d}' for t, n, d, _ in foreign]
    return per_table, foreign_ddl


def _copy_and_index(tables: list[str], rows: _Rows) -> list[tuple[float, str]]:
    """On a connection of its own: COPY the tables' rows, build their indexes and keys."""
    took = []
    with _floor_connection() as raw:
        raw.autocommit = False
        with raw.cursor() as cursor:
            cursor.execute("SET LOCAL synchronous_commit TO off")
            cursor.execute("SET LOCAL maintenance_work_mem TO '512MB'")
            for table in tables:
                began = time.perf_counter()
                with cursor.copy(COPY[table]) as copy:
                    for chunk in rows.chunks(table):
                        copy.write(chunk)
                took.append((time.perf_counter() - began, f"COPY {table}"))
            for table in tables:
                for statement in rows.restore[f"citations_{table}"]:
                    began = time.perf_counter()
                    cursor.execute(statement)
                    took.append((time.perf_counter() - began, statement))
        raw.commit()
        raw.autocommit = True
        for table in tables:
            raw.execute(f"ANALYZE citations_{table}")
    return took


def _load(total_facts: int) -> tuple[object, str, list[str], list[str], float]:
    """Load ``total_facts`` facts with versions, messages and evidence; time it all."""
    from django.db import connection, transaction
    from django.utils import timezone

    from citations.models import Generation
    from citations.services import project_create

    started = time.perf_counter()
    project, token = project_create(name="bench-ledger")
    generation = Generation.objects.create(project=project, kind="ingest", extractor_version="b")
    n_subjects = total_facts // FACTS_PER_SUBJECT
    now = timezone.now()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL synchronous_commit TO off")
        # Checked as each subject is copied: no trigger event may wait while keys are lifted.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        with cursor.copy(
            "COPY citations_subject (project_id, external_id, created_at) FROM STDIN"
        ) as copy:
            copy.write(
                "".join(
                    f"{project.pk}\tsubject-{i}\t{now.isoformat()}\n" for i in range(n_subjects)
                ).encode()
            )
        cursor.execute(
            "SELECT external_id, id FROM citations_subject WHERE project_id = %s", [project.pk]
        )
        by_name = dict(cursor.fetchall())
        subject_ids = [by_name[f"subject-{i}"] for i in range(n_subjects)]
        tables = [f"citations_{t}" for t in LOADED_TABLES]
        schema = _schema(cursor, tables)
        restore, foreign = _lift_indexes(cursor, tables)
        # The search and change-feed triggers (migration 0012) would run once a row; the
        # load fills their tables afterwards in one statement each, as the migration does.
        for statement in SEARCH_TRIGGERS_OFF:
            cursor.execute(statement)
        cursor.execute("ANALYZE citations_subject")
    rows = _Rows(project.pk, generation.pk, subject_ids, now)
    rows.restore = restore
    # Two connections (the machine has two cores): one's rows are generated while the
    # other's are written and indexed. The versions' GiST exclusion constraint is the
    # longest step, so that table has a connection to itself.
    with ThreadPoolExecutor(2) as pool:
        halves = [["observation", "fact", "evidence"], ["factversion"]]
        took = [step for half in pool.map(_copy_and_index, halves, [rows, rows]) for step in half]
    indexed = time.perf_counter()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL synchronous_commit TO off")
        for statement in foreign:  # each key checked once, by a join
            began = time.perf_counter()
            cursor.execute(statement)
            took.append((time.perf_counter() - began, statement))
        after = _schema(cursor, tables)
        assert after == schema, sorted(set(after) ^ set(schema))
    keyed = time.perf_counter()
    took += _index_for_search()
    searchable = time.perf_counter()
    _vacuum([*tables, "citations_subject", "citations_factsearch", "citations_factchange"])
    print(
        f"load: rows, indexes and keys {indexed - started:.1f} s, "
        f"foreign keys {keyed - indexed:.1f} s, "
        f"search index and change feed {searchable - keyed:.1f} s, "
        f"vacuum {time.perf_counter() - searchable:.1f} s"
    )
    for seconds, statement in sorted(took, reverse=True)[:8]:
        print(f"  {seconds:5.1f} s  {statement[:110]}")
    rng = random.Random(11)
    sample_facts = [
        f"{rows.fact_base}{n:012x}"
        for n in rng.sample(range(n_subjects * FACTS_PER_SUBJECT), min(10_000, n_subjects))
    ]
    subjects = [f"subject-{i}" for i in range(n_subjects)]
    return project, token, sample_facts, subjects, time.perf_counter() - started


def _vacuum(tables: list[str]) -> None:
    """VACUUM (ANALYZE) the loaded tables, as autovacuum does some time after rows arrive.

    A ledger that grew to a million facts over time has had its tables vacuumed; one
    just loaded by COPY has not: measured straight away, the first reads of each page set
    its rows' hint bits (and write the page back), and autovacuum starts on the new tables
    while the requests run, on the same two cores. Both are the load's cost, not a read's.
    """
    from django.db import connection

    with connection.cursor() as cursor:
        for table in tables:
            cursor.execute(f"VACUUM (ANALYZE) {table}")


SEARCH_TRIGGERS_OFF = (
    "ALTER TABLE citations_fact DISABLE TRIGGER citations_fact_index",
    "ALTER TABLE citations_factversion DISABLE TRIGGER citations_factversion_changes",
)
SEARCH_INDEX = "citations_factsearch_subject_vector"


def _index_for_search() -> list[tuple[float, str]]:
    """Fill the search rows and the change feed as migration 0012 does for stored facts
    (GIN index built once, after the rows), then turn the triggers back on."""
    from importlib import import_module

    from django.db import connection, transaction

    backfill = import_module("citations.migrations.0014_fact_search_and_changes").PG_BACKFILL
    took = []
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL synchronous_commit TO off")
        cursor.execute("SET LOCAL maintenance_work_mem TO '512MB'")
        # Keys checked as rows go in: no trigger event may wait while the index is built.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute("SELECT pg_get_indexdef(%s::regclass)", [SEARCH_INDEX])
        (definition,) = cursor.fetchone()
        cursor.execute(f"DROP INDEX {SEARCH_INDEX}")
        for statement in [*filter(str.strip, backfill.split(";")), definition]:
            began = time.perf_counter()
            cursor.execute(statement)
            took.append((time.perf_counter() - began, statement.strip()))
        for statement in SEARCH_TRIGGERS_OFF:
            cursor.execute(statement.replace("DISABLE", "ENABLE"))
    for table in ("citations_factsearch", "citations_factchange"):
        with connection.cursor() as cursor:
            cursor.execute(f"ANALYZE {table}")
    return took


QUESTION = "where does she live now?"


def _ranked_plan(client, subject: str) -> str:
    """EXPLAIN ANALYZE of a ranked recall's one statement for one subject, as the request
    sends it: the text's matches and, "where" asking for places, the subject's facts of
    those predicates, with their versions."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        response = client.post("/v1/recall", {"subject": subject, "query": QUESTION}, format="json")
    assert response.status_code == 200, response.content
    [sql] = [q["sql"] for q in queries.captured_queries if "citations_factsearch" in q["sql"]]
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql)
        return "\n".join(row[0] for row in cursor.fetchall())


def _percentiles(timings: list[float]) -> tuple[float, float]:
    timings = sorted(timings)
    return statistics.median(timings), timings[max(0, int(len(timings) * 0.99) - 1)]


def _head_append(statements: list[str]) -> bool:
    """Whether a request's statements include the periodic log append of the audit head."""
    return any("receipts_logleaf" in sql for sql in statements)


def _replay(raw, statements: list[str]) -> None:
    """Send a request's statements as the service sent them, through psycopg alone.

    Django logs a transaction's start as BEGIN; the service's snapshot sends its level
    with it, so the replay does too (the read's transaction is the request's first).
    """
    with raw.cursor() as cursor:
        for sql in statements:
            if sql == "BEGIN":
                sql = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
            cursor.execute(sql)
            if cursor.description is not None:
                cursor.fetchall()


def _floor_connection():
    import psycopg
    from django.db import connection

    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    params.pop("prepare_threshold", None)
    return psycopg.connect(**params, autocommit=True)


def main() -> None:
    _setup_django()
    from django.db import connection
    from django.test.utils import CaptureQueriesContext, setup_test_environment
    from rest_framework.test import APIClient

    if connection.vendor != "postgresql":
        print("bench_ledger needs DATABASE_URL=postgres://…; skipped.")
        return
    total = int(os.environ.get("BENCH_LEDGER_FACTS", "1000000"))
    samples = int(os.environ.get("BENCH_LEDGER_SAMPLES", "2000"))
    setup_test_environment()
    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    # The floor's connection is closed before the database is dropped, on failure too.
    stack = contextlib.ExitStack()
    try:
        print(f"load average before the load: {os.getloadavg()[0]:.1f}")
        project, token, fact_ids, subjects, load_seconds = _load(total)
        from citations.models import Evidence, Fact
        from citations.services import audit_chain_intact
        from receipts.models import LogLeaf

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

        def recall_ranked():
            body = {"subject": rng.choice(subjects), "query": QUESTION}
            response = client.post("/v1/recall", body, format="json")
            facts = response.json()["facts"]
            assert response.status_code == 200 and facts[0]["predicate"] == "lives_in", facts

        plan = _ranked_plan(client, rng.choice(subjects))
        print("ranked recall's statement, EXPLAIN ANALYZE:\n  " + plan.replace("\n", "\n  "))
        assert SEARCH_INDEX in plan, "the ranked search does not use the GIN index"
        # The loaded tables: an empty one (retractions, here) may be read whole for nothing.
        scanned = [
            t
            for t in (*LOADED_TABLES, "subject", "factsearch")
            if f"Seq Scan on citations_{t} " in plan
        ]
        assert not scanned, f"the ranked recall reads a whole table: {scanned}"

        raw = stack.enter_context(_floor_connection())
        print(
            "request        API median / p99 (CPU)        raw SQL median / p99   ratio  statements"
        )
        for name, call in [
            ("resolve", resolve),
            ("recall", recall),
            ("recall as_of", recall_history),
            ("recall query", recall_ranked),
        ]:
            # The statements of some requests, captured to be replayed as the floor. A
            # request that also appended the project's audit head to the transparency log
            # (at most once per ATTEST_AUDIT_HEAD_INTERVAL) is not replayed: its INSERT
            # takes the log's next index, which a replay cannot take again. The API side
            # pays those appends at their real rate; they are counted and printed.
            captured = []
            while len(captured) < 100:
                with CaptureQueriesContext(connection) as queries:
                    call()
                statements = [q["sql"] for q in queries.captured_queries]
                if not _head_append(statements):
                    captured.append(statements)
            counts = sorted({len(statements) for statements in captured})
            heads_before = LogLeaf.objects.filter(kind=LogLeaf.AUDIT_HEAD).count()
            for statements in captured[:20]:  # warm the replay's connection
                _replay(raw, statements)
            api, floor, cpu = [], [], []
            loads = [os.getloadavg()[0]]
            for i in range(samples):
                # Interleaved, so both see the same moments of a shared machine.
                began, began_cpu = time.perf_counter(), time.thread_time()
                call()
                api.append((time.perf_counter() - began) * 1000)
                cpu.append((time.thread_time() - began_cpu) * 1000)
                began = time.perf_counter()
                _replay(raw, captured[i % len(captured)])
                floor.append((time.perf_counter() - began) * 1000)
            loads.append(os.getloadavg()[0])
            heads = LogLeaf.objects.filter(kind=LogLeaf.AUDIT_HEAD).count() - heads_before
            api_median, api_p99 = _percentiles(api)
            floor_median, floor_p99 = _percentiles(floor)
            print(
                f"{name:14s} {api_median:6.2f} / {api_p99:6.2f} ms "
                f"({statistics.median(cpu):5.2f} ms)   {floor_median:6.2f} / {floor_p99:6.2f} ms"
                f"   {api_median / floor_median:4.1f}x  {'/'.join(map(str, counts))}"
                f"   [{samples} each, {heads} with a head append, "
                f"load average {loads[0]:.1f}→{loads[1]:.1f}]"
            )
        assert audit_chain_intact(project=project), "the audit chain broke under the benchmark"
    finally:
        stack.close()
        connection.close()
        connection.creation.destroy_test_db(old_name, verbosity=0)


if __name__ == "__main__":
    main()
