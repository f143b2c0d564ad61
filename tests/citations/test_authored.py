"""POST /v1/facts: a person states a fact directly; its evidence names who wrote it."""

from __future__ import annotations

import pytest

from citations.models import AuditEvent, Observation

pytestmark = pytest.mark.django_db


def author(ledger, **body):
    payload = {
        "subject": "u",
        "predicate": "lives_in",
        "statement": "Lives in Cork since June.",
        "value": "Cork",
        "authored_by": "support:ana",
        "valid_from": "2026-06-01T00:00:00Z",
        **body,
    }
    return ledger.client.post("/v1/facts", payload, format="json")


def test_an_authored_record_resolves_with_authored_evidence(ledger):
    response = author(ledger)
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["statement"] == "Lives in Cork since June."
    assert body["status"] == "current"
    assert body["valid"]["from"] == "2026-06-01T00:00:00Z"
    [evidence] = body["evidence"]
    assert evidence["authored_by"] == "support:ana"
    assert evidence["quote"] == "Lives in Cork since June."
    assert evidence["extractor_version"] == "authored"
    assert ledger.resolve(body["id"]).json() == body
    event = AuditEvent.objects.get(operation="fact.author")
    assert event.object_ids == [body["id"]]


def test_extracted_evidence_has_no_authored_by(ledger):
    response = ledger.ingest("u", ("m1", "I like tea.", "2026-03-04T10:00:00Z"))
    evidence = ledger.resolve(response.json()["facts"][0]["id"]).json()["evidence"][0]
    assert "authored_by" not in evidence


def test_an_authored_value_supersedes_the_extracted_one_by_structure(ledger):
    extracted = ledger.ingest("u", ("m1", "I moved to Dublin in March.", "2026-03-04T10:00:00Z"))
    dublin = extracted.json()["facts"][0]["id"]
    cork = author(ledger).json()
    old = ledger.resolve(dublin).json()
    assert old["status"] == "validity_closed"
    assert old["superseded_by"] == cork["id"]
    assert old["valid"]["until"] == "2026-06-01T00:00:00Z"
    observation = Observation.objects.get(pk=old["supersession_source_observation_id"])
    assert observation.message_id.startswith("authored:")


def test_valid_until_closes_the_record_without_a_successor(ledger):
    body = author(ledger, valid_until="2026-09-01T00:00:00Z").json()
    assert body["status"] == "validity_closed"
    assert body["valid"]["until"] == "2026-09-01T00:00:00Z"
    assert body["superseded_by"] is None


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"subject": 123}, "subject"),
        ({"authored_by": None}, "authored_by"),
        ({"predicate": "owns"}, "predicate"),
        ({"statement": 12.5}, "statement"),
        ({"valid_from": "2026-06-01T00:00:00"}, "valid_from"),
        ({"valid_until": "2026-05-01T00:00:00Z"}, "valid_until"),
    ],
)
def test_a_malformed_record_is_refused_with_its_field(ledger, changes, field):
    response = author(ledger, **changes)
    assert response.status_code == 400
    assert response.json()["error"]["details"]["field"] == field
    assert not Observation.objects.exists()


@pytest.mark.parametrize(
    "changes",
    [
        {"statement": "0" * 2000, "value": None},  # the statement is the value by default
        {"value": "\u00df" * 150},  # 150 characters, 300 once case-folded
    ],
)
def test_a_value_longer_than_its_column_is_refused_not_a_server_error(ledger, changes):
    body = {k: v for k, v in changes.items() if v is not None}
    payload = {
        "subject": "u",
        "predicate": "name",
        "statement": "Named so.",
        "value": "Ann",
        "authored_by": "support:ana",
        **body,
    }
    if changes.get("value", "") is None:
        del payload["value"]
    response = ledger.client.post("/v1/facts", payload, format="json")
    assert response.status_code == 400, response.json()
    assert response.json()["error"]["details"]["field"] == "value"
