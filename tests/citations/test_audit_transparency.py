"""Each project's audit chain head is in the transparency log, so a cut tail is found."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection, transaction

from citations.models import AuditEvent
from citations.services.audit import audit_chain_first_break, audit_record
from receipts.log import latest_audit_head
from receipts.models import LogLeaf

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def every_head_logged(settings):
    settings.ATTEST_AUDIT_HEAD_INTERVAL = 0  # after every event, so the tail is all logged


def test_heads_are_logged_at_most_once_per_interval(
    ledger, settings, django_capture_on_commit_callbacks
):
    settings.ATTEST_AUDIT_HEAD_INTERVAL = 3600
    _ingest(ledger, django_capture_on_commit_callbacks, 3)
    logged = LogLeaf.objects.filter(kind="audit_head", audit_project=ledger.project.pk)
    # The project's first event logs its head; the next two, within the hour, do not.
    assert [json.loads(leaf.data)["audit_head"]["seq"] for leaf in logged] == [1]
    out = StringIO()
    call_command("verify_audit_chain", ledger.project.name, stdout=out)
    assert "2 not yet in the transparency log" in out.getvalue()


def test_a_rolled_back_event_does_not_hold_the_next_head_back(
    ledger, settings, django_capture_on_commit_callbacks
):
    # The interval counts from a head that reached the log: an event whose transaction
    # rolled back logged nothing, so the next committed event's head is logged at once.
    settings.ATTEST_AUDIT_HEAD_INTERVAL = 3600
    event = {"project": ledger.project, "operation": "recall", "actor": "test", "object_ids": []}
    with (
        django_capture_on_commit_callbacks(execute=True),
        pytest.raises(RuntimeError),
        transaction.atomic(),
    ):
        audit_record(**event)
        raise RuntimeError("the call failed after writing its event")
    assert latest_audit_head(project=ledger.project.pk) is None
    with django_capture_on_commit_callbacks(execute=True):
        committed = audit_record(**event)
    logged = latest_audit_head(project=ledger.project.pk)
    assert logged is not None
    assert (logged["seq"], logged["hash"]) == (committed.seq, committed.hash)


def _ingest(ledger, capture, count: int) -> None:
    for i in range(count):
        with capture(execute=True):  # the head is logged once the event commits
            ledger.ingest("u", (f"m{i}", "I like tea.", "2026-03-04T10:11:58Z"))


def _delete_past_the_trigger(project, after_seq: int) -> None:
    """What a database superuser can do: switch the append-only trigger off and delete."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SET LOCAL session_replication_role = replica")
        else:
            cursor.execute("DROP TRIGGER citations_auditevent_no_delete")
        cursor.execute(
            "DELETE FROM citations_auditevent WHERE project_id = %s AND seq > %s",
            [project.pk, after_seq],
        )
        if connection.vendor == "postgresql":
            cursor.execute("SET LOCAL session_replication_role = origin")


def test_each_event_logs_the_chain_head_without_content(ledger, django_capture_on_commit_callbacks):
    _ingest(ledger, django_capture_on_commit_callbacks, 3)
    last = AuditEvent.objects.filter(project=ledger.project).latest("seq")
    leaf = LogLeaf.objects.filter(kind="audit_head").latest("index")
    assert json.loads(leaf.data) == {
        "audit_head": {"hash": last.hash, "project": ledger.project.pk, "seq": last.seq}
    }
    assert "tea" not in leaf.data and "u" not in json.loads(leaf.data)["audit_head"]
    out = StringIO()
    call_command("verify_audit_chain", ledger.project.name, stdout=out)
    assert out.getvalue().strip() == f"{ledger.project.name}: intact ({last.seq} events)"


def test_a_cut_tail_is_found_against_the_logged_head(ledger, django_capture_on_commit_callbacks):
    _ingest(ledger, django_capture_on_commit_callbacks, 5)
    events = AuditEvent.objects.filter(project=ledger.project).count()
    _delete_past_the_trigger(ledger.project, after_seq=events - 3)
    # What is left recomputes: only the log knows where the chain ended.
    assert AuditEvent.objects.filter(project=ledger.project).count() == events - 3
    first_break = audit_chain_first_break(project=ledger.project)
    assert first_break is not None
    assert first_break.seq == events - 2
    assert f"holds its head at event {events}" in first_break.reason
    out = StringIO()
    with pytest.raises(CommandError):
        call_command("verify_audit_chain", ledger.project.name, stdout=out)
    assert f"BROKEN at event {events - 2}" in out.getvalue()


def test_events_not_yet_logged_are_reported_and_logged_on_request(ledger):
    # Without the commit hook running (a crash between commit and append), the head is
    # missing from the log: reported, not called intact-and-logged, and logged on request.
    ledger.ingest("u", ("m1", "I like tea.", "2026-03-04T10:11:58Z"))
    out = StringIO()
    call_command("verify_audit_chain", ledger.project.name, stdout=out)
    assert "1 not yet in the transparency log" in out.getvalue()
    out = StringIO()
    call_command("verify_audit_chain", ledger.project.name, "--log-heads", stdout=out)
    assert "not yet" not in out.getvalue()
    assert LogLeaf.objects.filter(kind="audit_head", audit_project=ledger.project.pk).count() == 1
