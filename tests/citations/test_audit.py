"""Audit events: one per ingest, resolve and recall, counts but no content, chained, append-only."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import DatabaseError, connection, transaction

from citations.models import AuditEvent, Observation
from citations.services import audit_chain_intact
from citations.services.audit import audit_chain_first_break

pytestmark = pytest.mark.django_db


def test_ingest_and_resolve_write_content_free_audit_events(ledger):
    response = ledger.ingest("u", ("m1", "I moved to Dublin in March.", "2026-03-04T10:11:58Z"))
    fact_id = response.json()["facts"][0]["id"]
    ledger.resolve(fact_id)
    ingest, resolve = AuditEvent.objects.filter(project=ledger.project).order_by("seq")
    assert ingest.operation == "observations.ingest"
    assert ingest.source_count == 1
    assert fact_id in ingest.object_ids
    assert resolve.operation == "citation.resolve"
    assert resolve.object_ids == [fact_id]
    assert resolve.source_count == 1
    assert resolve.actor.startswith("credential:")
    for event in (ingest, resolve):
        row = str({f.name: getattr(event, f.name) for f in AuditEvent._meta.fields})
        assert "Dublin" not in row and "moved" not in row


def test_a_probe_of_another_projects_id_is_audited_in_the_prober_chain(ledger, other_ledger):
    response = ledger.ingest("u", ("m1", "I like tea.", "2026-03-04T10:11:58Z"))
    fact_id = response.json()["facts"][0]["id"]
    assert other_ledger.resolve(fact_id).status_code == 404
    probe = AuditEvent.objects.get(project=other_ledger.project)
    assert (probe.operation, probe.outcome, probe.object_ids) == (
        "citation.resolve",
        "not_found",
        [fact_id],
    )
    assert probe.actor.startswith("credential:")
    assert not AuditEvent.objects.filter(project=ledger.project, outcome="not_found").exists()
    assert audit_chain_intact(project=other_ledger.project)


def test_an_evidence_mismatch_500_is_audited(ledger):
    response = ledger.ingest("u", ("m1", "I like tea.", "2026-03-04T10:11:58Z"))
    fact_id = response.json()["facts"][0]["id"]
    Observation.objects.filter(message_id="m1").update(content=b"I like tex.")
    assert ledger.resolve(fact_id).status_code == 500
    event = AuditEvent.objects.filter(project=ledger.project).latest("seq")
    assert (event.operation, event.outcome, event.object_ids) == (
        "citation.resolve",
        "evidence_mismatch",
        [fact_id],
    )


@pytest.mark.parametrize(
    ("method", "path", "body", "operation", "outcome"),
    [
        ("post", "/v1/citations/resolve", {"id": "bad"}, "citation.resolve", "invalid_citation"),
        ("post", "/v1/recall", {"subject": 5}, "facts.recall", "invalid_request"),
        ("post", "/v1/observations", {"subject": "u"}, "observations.ingest", "invalid_request"),
        ("post", "/v1/facts", {"subject": "u"}, "fact.author", "invalid_request"),
        ("get", "/v1/facts", {"limit": "0"}, "facts.list", "invalid_request"),
        ("post", "/v1/changes", {"limit": 0}, "changes.list", "invalid_request"),
        ("get", "/v1/subjects", {"limit": "0"}, "subjects.list", "invalid_request"),
        (
            "post",
            "/v1/facts/4b7f0c1e-2d9a-4e3b-8f61-0a5c9e2d7b14/retract",
            {"reason": "x"},
            "fact.retract",
            "not_found",
        ),
    ],
)
def test_every_refused_ledger_call_is_audited_with_its_code(
    ledger, method, path, body, operation, outcome
):
    response = getattr(ledger.client, method)(
        path, body, **({"format": "json"} if method == "post" else {})
    )
    assert response.status_code >= 400
    event = AuditEvent.objects.get(project=ledger.project)
    assert (event.operation, event.outcome) == (operation, outcome)
    assert "bad" not in event.object_ids  # only well-formed IDs, never what was typed


def test_successful_calls_are_audited_as_ok(ledger):
    ledger.ingest("u", ("m1", "I like tea.", "2026-03-04T10:11:58Z"))
    assert AuditEvent.objects.get(project=ledger.project).outcome == "ok"


def test_the_chain_check_names_the_first_broken_link(ledger):
    for i in range(3):
        ledger.ingest("u", (f"m{i}", "I like tea.", "2026-03-04T10:11:58Z"))
    assert audit_chain_first_break(project=ledger.project) is None
    last = AuditEvent.objects.filter(project=ledger.project).latest("seq")
    # Rows cannot be changed or removed (triggers), so a forger can only add: a row whose
    # hash does not cover its content, then a well-chained one after it.
    forged = AuditEvent.objects.create(
        project=ledger.project,
        seq=last.seq + 1,
        operation="citation.resolve",
        actor="nobody",
        object_ids=[],
        created_at=last.created_at,
        prev_hash=last.hash,
        hash="f" * 64,
    )
    ledger.ingest("u", ("m9", "I like tea.", "2026-03-04T10:11:58Z"))
    first_break = audit_chain_first_break(project=ledger.project)
    assert first_break.seq == forged.seq
    assert "hash" in first_break.reason

    out = StringIO()
    with pytest.raises(CommandError):
        call_command("verify_audit_chain", ledger.project.name, stdout=out)
    assert f"BROKEN at event {forged.seq}" in out.getvalue()


def test_the_command_reports_intact_chains_and_exits_cleanly(ledger, other_ledger):
    ledger.ingest("u", ("m1", "I like tea.", "2026-03-04T10:11:58Z"))
    out = StringIO()
    call_command("verify_audit_chain", stdout=out)
    assert f"{ledger.project.name}: intact (1 events)" in out.getvalue()
    assert f"{other_ledger.project.name}: intact (0 events)" in out.getvalue()
    with pytest.raises(CommandError, match="No project"):
        call_command("verify_audit_chain", "no-such-project", stdout=StringIO())


def test_each_event_is_chained_to_the_previous_one(ledger):
    for i in range(3):
        ledger.ingest("u", (f"m{i}", "I like tea.", "2026-03-04T10:11:58Z"))
    assert audit_chain_intact(project=ledger.project)
    events = list(AuditEvent.objects.filter(project=ledger.project).order_by("seq"))
    assert [e.prev_hash for e in events[1:]] == [e.hash for e in events[:-1]]


def test_audit_rows_refuse_update_and_delete_in_the_database(ledger):
    ledger.ingest("u", ("m1", "I like tea.", "2026-03-04T10:11:58Z"))
    events = AuditEvent.objects.filter(project=ledger.project)
    with pytest.raises(DatabaseError), transaction.atomic():
        events.update(source_count=99)
    with pytest.raises(DatabaseError), transaction.atomic():
        events.delete()
    with pytest.raises(ValueError):
        events.first().save()


@pytest.mark.postgres
def test_the_audit_log_cannot_be_truncated_by_the_applications_database_user(ledger):
    # TRUNCATE fires no row trigger: a statement trigger refuses it, for the very user and
    # connection the service writes with.
    ledger.ingest("u", ("m1", "I like tea.", "2026-03-04T10:11:58Z"))
    with (
        pytest.raises(DatabaseError, match="append-only"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        # The test's own transaction still holds the ingest's deferred foreign-key checks,
        # which PostgreSQL refuses to truncate past: run them first, as a commit would.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute("TRUNCATE citations_auditevent")
    assert AuditEvent.objects.filter(project=ledger.project).exists()


def test_a_delete_of_every_audit_row_is_refused(ledger):
    # SQLite has no TRUNCATE: an unqualified DELETE is its form, and the row trigger stops
    # it (SQLite skips its truncate shortcut on a table with triggers).
    ledger.ingest("u", ("m1", "I like tea.", "2026-03-04T10:11:58Z"))
    with (
        pytest.raises(DatabaseError, match="append-only"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute("DELETE FROM citations_auditevent")
    assert AuditEvent.objects.filter(project=ledger.project).exists()


def test_a_body_that_is_not_json_is_audited_too(ledger):
    response = ledger.client.post(
        "/v1/citations/resolve", data="{not json", content_type="application/json"
    )
    assert response.status_code == 400
    event = AuditEvent.objects.get(project=ledger.project)
    assert (event.operation, event.outcome, event.object_ids) == (
        "citation.resolve",
        "invalid_json",
        [],
    )
