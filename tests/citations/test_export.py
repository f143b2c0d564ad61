"""The subject export: streamed NDJSON of every live row about a subject, from one snapshot."""

from __future__ import annotations

import hashlib
import json
from urllib.parse import quote

import pytest

from citations.models import AuditEvent, Observation, Subject
from citations.selectors import EvidenceMismatch
from citations.services.audit import audit_chain_intact

pytestmark = pytest.mark.django_db


def export(ledger, subject: str):
    return ledger.client.get(f"/v1/subjects/{quote(subject, safe='')}/export")


def lines_of(response) -> list[dict]:
    assert response.status_code == 200, response.content
    assert response["Content-Type"] == "application/x-ndjson"
    assert response.streaming
    body = b"".join(response.streaming_content).decode()
    assert body.endswith("\n")
    return [json.loads(line) for line in body.splitlines()]


def of_type(lines, kind) -> list[dict]:
    return [line for line in lines if line["type"] == kind]


def seed(ledger):
    # Dublin in a request of its own, then closed by Cork: it has two versions to export.
    ledger.ingest("u", ("m1", "I moved to Dublin in March.", "2026-03-04T10:00:00Z"))
    ledger.ingest(
        "u",
        ("m2", "I moved to Cork in May. Café au lait is great.", "2026-05-04T10:00:00Z"),
        ("m3", "I like tea.", "2026-05-05T10:00:00Z"),
    )
    ledger.ingest("u", ("a1", "Noted, you like tea.", "2026-05-05T10:01:00Z"), role="assistant")
    ledger.ingest("v", ("x1", "I live in Oslo.", "2026-05-05T10:00:00Z"))


def test_export_streams_every_row_of_the_subject(ledger):
    seed(ledger)
    lines = lines_of(export(ledger, "u"))

    assert lines[0]["type"] == "subject" and lines[0]["id"] == "u"
    assert lines[-1]["type"] == "end"
    counted = {kind: len(of_type(lines, kind)) for kind in lines[-1]["counts"]}
    assert lines[-1]["counts"] == counted
    observations = of_type(lines, "observation")
    assert [o["message_id"] for o in observations] == ["m1", "m2", "m3", "a1"]
    assert observations[1]["text"] == "I moved to Cork in May. Café au lait is great."
    facts = {f["value"]: f for f in of_type(lines, "fact")}
    assert set(facts) == {"Dublin", "Cork", "tea"}
    assert facts["Dublin"]["status"] == "validity_closed"
    assert facts["Dublin"]["superseded_by"] == facts["Cork"]["id"]
    assert [v["seq"] for v in facts["Dublin"]["versions"]] == [1, 2]
    for fact in facts.values():
        resolved = ledger.resolve(fact["id"]).json()
        exported = [
            e
            for e in of_type(lines, "evidence")
            if e["fact_id"] == fact["id"] and e["known_until"] is None
        ]
        assert [e["quote"] for e in exported] == [e["quote"] for e in resolved["evidence"]]
        assert fact["version"] == resolved["version"]
    (generation,) = of_type(lines, "generation")
    assert generation["id"] == facts["tea"]["generation"]
    assert "Oslo" not in json.dumps(lines)
    assert AuditEvent.objects.filter(operation="subject.export").count() == 1


def test_export_of_an_unknown_erased_or_foreign_subject_is_not_found(ledger, other_ledger):
    seed(ledger)
    ledger.client.post("/v1/erasures", {"subject": "v"}, format="json")
    for who, subject in [(ledger, "nobody"), (ledger, "v"), (other_ledger, "u")]:
        response = export(who, subject)
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "not_found"


def test_an_erased_message_and_its_facts_leave_the_export(ledger):
    seed(ledger)
    ledger.client.post("/v1/erasures", {"subject": "u", "message_id": "m2"}, format="json")
    lines = lines_of(export(ledger, "u"))
    assert "Cork" not in json.dumps(lines) and "Café" not in json.dumps(lines)
    assert [o["message_id"] for o in of_type(lines, "observation")] == ["m1", "m3", "a1"]
    assert {f["value"] for f in of_type(lines, "fact")} == {"Dublin", "tea"}


def test_a_rebuild_shows_in_the_export(ledger):
    seed(ledger)
    ledger.client.post("/v1/rebuilds", {"subject": "u", "message_id": "m3"}, format="json")
    lines = lines_of(export(ledger, "u"))
    teas = [f for f in of_type(lines, "fact") if f["value"] == "tea"]
    assert sorted(f["status"] for f in teas) == ["current", "reinterpreted"]
    kinds = {g["kind"] for g in of_type(lines, "generation")}
    assert kinds == {"ingest", "source"}


def test_subject_ids_with_a_slash_export(ledger):
    ledger.ingest("team/alice", ("m1", "I like tea.", "2026-05-05T10:00:00Z"))
    assert lines_of(export(ledger, "team/alice"))[0]["id"] == "team/alice"


def test_a_byte_mismatch_stops_the_stream_before_its_end_line(ledger):
    seed(ledger)
    Observation.objects.filter(message_id="m3").update(content=b"I like TEA.")
    response = export(ledger, "u")
    assert response.status_code == 200
    with pytest.raises(EvidenceMismatch):
        b"".join(response.streaming_content)


def test_altered_message_bytes_stop_the_stream(ledger):
    seed(ledger)
    Observation.objects.filter(message_id="a1").update(content=b"Noted, you like coffee.")
    with pytest.raises(EvidenceMismatch):
        b"".join(export(ledger, "u").streaming_content)


def export_events(ledger) -> list[AuditEvent]:
    return list(
        AuditEvent.objects.filter(project=ledger.project, operation="subject.export").order_by(
            "seq"
        )
    )


def test_a_row_that_fails_to_serialise_mid_stream_leaves_a_failed_audit_event(ledger):
    seed(ledger)
    # Bytes that hash right but are not UTF-8: the line cannot be built, after the first
    # lines were sent.
    broken = b"I like t\xffa."
    Observation.objects.filter(message_id="m3").update(
        content=broken, content_sha256=hashlib.sha256(broken).hexdigest()
    )
    response = export(ledger, "u")
    assert response.status_code == 200
    chunks = []
    with pytest.raises(UnicodeDecodeError):
        for chunk in response.streaming_content:
            chunks.append(chunk)
    assert [json.loads(chunk)["type"] for chunk in chunks] == [
        "subject",
        "observation",
        "observation",
    ]

    started, cut_short = export_events(ledger)
    assert started.outcome == "ok"
    subject_pk = str(Subject.objects.get(project=ledger.project, external_id="u").pk)
    assert (cut_short.outcome, cut_short.object_ids, cut_short.source_count) == (
        "server_error",
        [subject_pk],
        0,
    )
    assert audit_chain_intact(project=ledger.project)


def test_a_byte_mismatch_mid_stream_is_audited_as_evidence_mismatch(ledger):
    seed(ledger)
    Observation.objects.filter(message_id="a1").update(content=b"Noted, you like coffee.")
    with pytest.raises(EvidenceMismatch):
        b"".join(export(ledger, "u").streaming_content)
    assert [event.outcome for event in export_events(ledger)] == ["ok", "evidence_mismatch"]
