"""How many round trips to PostgreSQL a resolve and a recall cost, pinned so a regression
shows (a count, never a time).

Counted outside any test transaction (``transaction=True``), as a request runs in
production. A resolve: the credential lookup; BEGIN (REPEATABLE READ READ ONLY in the
BEGIN itself), the fact's latest version, its page of evidence, COMMIT; and one
statement that appends the audit event, durable when it returns. A recall reads its
facts in one statement of the same kind of snapshot. A ranked recall (``query``) finds
and reads its facts in one statement, which sees one state by itself: no transaction.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from citations.models import AuditEvent, Fact
from citations.services import audit_chain_intact
from tests.citations.conftest import make_ledger

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

# BEGIN and COMMIT are in Django's log of queries, as they are round trips too.
RESOLVE = ["credential", "BEGIN", "version", "evidence", "COMMIT", "audit"]
RECALL = ["credential", "BEGIN", "versions", "COMMIT", "audit"]
RANKED = ["credential", "search and versions", "audit"]


def _ledger_with_facts():
    ledger = make_ledger()
    response = ledger.ingest(
        "u",
        ("m1", "I moved to Dublin in 2019.", "2026-03-04T10:11:58Z"),
        ("m2", "I like tea.", "2026-03-04T10:12:58Z"),
    )
    assert response.status_code == 201
    return ledger


def _statements(call) -> list[str]:
    with CaptureQueriesContext(connection) as queries:
        response = call()
    assert response.status_code == 200, response.content
    return [query["sql"] for query in queries.captured_queries]


def test_a_resolve_takes_the_pinned_number_of_statements():
    ledger = _ledger_with_facts()
    fact = Fact.objects.get(project=ledger.project, predicate="lives_in")
    ledger.resolve(fact.pk)  # the first request of a connection may set it up
    statements = _statements(lambda: ledger.resolve(fact.pk))
    assert len(statements) == len(RESOLVE), statements
    assert statements[1] == "BEGIN" and statements[4] == "COMMIT"
    assert audit_chain_intact(project=ledger.project)


def test_a_recall_takes_the_pinned_number_of_statements():
    ledger = _ledger_with_facts()
    ledger.recall("u")
    statements = _statements(lambda: ledger.recall("u"))
    assert len(statements) == len(RECALL), statements
    assert statements[1] == "BEGIN" and statements[3] == "COMMIT"
    assert AuditEvent.objects.filter(project=ledger.project, operation="facts.recall").count() == 2
    assert audit_chain_intact(project=ledger.project)


def test_a_ranked_recall_is_one_statement_between_the_credential_and_the_audit():
    ledger = _ledger_with_facts()
    ledger.recall("u", query="where does she live?")
    statements = _statements(lambda: ledger.recall("u", query="where does she live?"))
    assert len(statements) == len(RANKED), statements
    assert "citations_factsearch" in statements[1] and "citations_factversion" in statements[1]
    assert statements[2].lstrip().startswith("WITH chain_lock")
    first = ledger.recall("u", query="where does she live?").json()["facts"][0]
    assert (first["predicate"], first["value"]) == ("lives_in", "Dublin")
    assert audit_chain_intact(project=ledger.project)


def test_appends_outside_a_transaction_at_once_keep_one_unbroken_chain():
    # Each waits at the project's lock with a snapshot older than the writer before it;
    # the unique (project, seq) refuses the stale link and the append is made again
    # behind the lock.
    import threading

    from citations.services.audit import audit_record

    ledger = make_ledger()
    barrier = threading.Barrier(6)
    failures: list[BaseException] = []

    def append(n: int) -> None:
        try:
            barrier.wait()
            audit_record(project=ledger.project, operation="x", actor=f"a{n}", object_ids=[])
        except BaseException as error:
            failures.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=append, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    seqs = sorted(AuditEvent.objects.filter(project=ledger.project).values_list("seq", flat=True))
    assert seqs == [1, 2, 3, 4, 5, 6]
    assert audit_chain_intact(project=ledger.project)


def test_the_database_hashes_an_event_as_the_chain_check_does():
    from citations.services.audit import audit_record

    ledger = make_ledger()
    event = audit_record(
        project=ledger.project,
        operation="citation.resolve",
        actor="crédential:ü東京",
        object_ids=['a"b\\c', "é"],
        source_count=3,
        request_id="req-ß",
    )
    stored = AuditEvent.objects.get(pk=event.pk)
    assert (stored.seq, stored.hash, stored.prev_hash) == (event.seq, event.hash, event.prev_hash)
    assert audit_chain_intact(project=ledger.project)


def _nodes(plan: dict):
    yield plan
    for child in plan.get("Plans", []):
        yield from _nodes(child)


@pytest.mark.django_db(transaction=False)
def test_the_append_reads_one_event_however_long_the_chain():
    # The chain head comes from the (project, seq) index, newest first, one row: reading
    # every event of the project made each append slower as the log grew.
    from citations.services.audit import audit_record

    ledger = make_ledger()
    for n in range(40):
        audit_record(project=ledger.project, operation="x", actor=f"a{n}", object_ids=[])
    with CaptureQueriesContext(connection) as queries:
        audit_record(project=ledger.project, operation="x", actor="last", object_ids=[])
    # Inside a transaction the project lock goes first, in the same round trip.
    append = queries.captured_queries[-1]["sql"].split(";\n", 1)[-1]
    assert append.lstrip().startswith("WITH chain_lock")
    with connection.cursor() as cursor:
        # As the planner sees a long chain: its statistics current, no table scan.
        cursor.execute("ANALYZE citations_auditevent")
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + append)
        [[explained]] = cursor.fetchall()
    plan = explained[0]["Plan"]
    scans = [
        (node["Node Type"], node.get("Index Name"), node["Actual Rows"])
        for node in _nodes(plan)
        if node.get("Relation Name") == "citations_auditevent" and "Scan" in node["Node Type"]
    ]
    assert scans and all(rows <= 1 for _, _, rows in scans), scans
