"""Audit events: one per ingest, resolve and recall, counts but no content, chained, append-only."""

from __future__ import annotations

import pytest
from django.db import DatabaseError, transaction

from citations.models import AuditEvent
from citations.services import audit_chain_intact

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


def test_a_failed_resolve_writes_no_event(ledger):
    ledger.client.post("/v1/citations/resolve", {"id": "bad"}, format="json")
    assert not AuditEvent.objects.filter(operation="citation.resolve").exists()


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
