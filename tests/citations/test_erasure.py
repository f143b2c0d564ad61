"""Erasure: content leaves every table, tombstones answer 404 everywhere, and it is audited."""

from __future__ import annotations

import pytest

from citations.models import AuditEvent, Fact, Observation
from tests.citations.scan import columns_holding

pytestmark = pytest.mark.django_db

SECRET_PLACE = "Quexlington"


def _erase(ledger, **body):
    return ledger.client.post("/v1/erasures", body, format="json")


def _facts(ledger, subject="u", **extra) -> list[dict]:
    return ledger.recall(subject, **extra).json()["facts"]


def _assert_not_found(response):
    assert response.status_code == 404, response.content
    assert response.json()["error"]["code"] == "not_found"


def test_erasing_a_message_removes_its_text_from_every_table(ledger):
    ledger.ingest(
        "u",
        ("m1", f"I live in {SECRET_PLACE}. My dog is called Bramblefoot.", "2026-03-04T10:00:00Z"),
        ("m2", "I like tea.", "2026-03-05T10:00:00Z"),
    )
    secret = next(f for f in _facts(ledger) if f["predicate"] == "lives_in")
    assert columns_holding(SECRET_PLACE, "Bramblefoot")  # the scan does find stored text

    response = _erase(ledger, subject="u", message_id="m1")

    assert response.status_code == 200, response.content
    assert response.json() == {"erased": {"observations": 1, "facts": 1}}
    assert columns_holding(SECRET_PLACE, "Bramblefoot") == []
    _assert_not_found(ledger.resolve(secret["id"]))
    assert [f["predicate"] for f in _facts(ledger)] == ["likes"]
    history = _facts(ledger, as_of={"known_at": "2026-03-06T00:00:00Z"})
    assert secret["id"] not in [f["id"] for f in history]
    tombstone = Observation.objects.get(message_id="m1")
    assert bytes(tombstone.content) == b"" and tombstone.content_sha256 == ""
    assert Fact.objects.get(pk=secret["id"]).statement == ""


def test_erased_ids_answer_not_found_on_every_route(ledger):
    ledger.ingest("u", ("m1", f"I live in {SECRET_PLACE}.", "2026-03-04T10:00:00Z"))
    _erase(ledger, subject="u", message_id="m1")

    _assert_not_found(
        ledger.ingest("u", ("m1", f"I live in {SECRET_PLACE}.", "2026-03-04T10:00:00Z"))
    )
    _assert_not_found(
        ledger.client.post("/v1/rebuilds", {"subject": "u", "message_id": "m1"}, format="json")
    )
    _assert_not_found(_erase(ledger, subject="u", message_id="m1"))
    assert columns_holding(SECRET_PLACE) == []


def test_erasing_a_subject_erases_everything_about_it(ledger):
    ledger.ingest(
        "u",
        ("m1", f"I live in {SECRET_PLACE}.", "2026-03-04T10:00:00Z"),
        ("m2", "I work at Zorblatt Industries.", "2026-03-05T10:00:00Z"),
    )
    ledger.ingest("v", ("m3", "I live in Cork.", "2026-03-04T10:00:00Z"))
    facts = _facts(ledger)

    response = _erase(ledger, subject="u")

    assert response.json() == {"erased": {"observations": 2, "facts": 2}}
    assert columns_holding(SECRET_PLACE, "Zorblatt") == []
    for fact in facts:
        _assert_not_found(ledger.resolve(fact["id"]))
    # An erased subject recalls exactly as a subject never seen does.
    assert ledger.recall("u").json() == ledger.recall("never-seen").json() == {"facts": []}
    _assert_not_found(ledger.ingest("u", ("m9", "I like tea.", "2026-03-06T10:00:00Z")))
    _assert_not_found(_erase(ledger, subject="u"))
    _assert_not_found(
        ledger.client.post("/v1/rebuilds", {"subject": "u", "message_id": "m2"}, format="json")
    )
    assert [f["value"] for f in _facts(ledger, "v")] == ["Cork"]


def test_a_fact_with_other_evidence_stays_with_a_remaining_source_s_words(ledger):
    ledger.ingest(
        "u",
        ("m1", "I live in DUBLIN.", "2026-03-04T10:00:00Z"),
        ("m2", "Well, I live in Dublin.", "2026-03-05T10:00:00Z"),
    )
    (fact,) = _facts(ledger)
    assert "DUBLIN" in fact["statement"]

    assert _erase(ledger, subject="u", message_id="m1").json()["erased"]["facts"] == 0

    resolved = ledger.resolve(fact["id"]).json()
    assert [row["source_message_id"] for row in resolved["evidence"]] == ["m2"]
    assert "DUBLIN" not in resolved["statement"] and "Dublin" in resolved["statement"]
    assert resolved["value"] == "Dublin"
    assert not [c for c in columns_holding("I live in DUBLIN") if "DUBLIN" in c]


def test_a_fact_closed_only_by_an_erased_message_is_believed_open_again(ledger):
    ledger.ingest(
        "u",
        ("m1", "I moved to Dublin in March.", "2026-03-04T10:00:00Z"),
        ("m2", f"I moved to {SECRET_PLACE} in May.", "2026-05-04T10:00:00Z"),
    )
    dublin = next(f for f in _facts(ledger, as_of={"valid_at": "2026-04-01T00:00:00Z"}))
    assert dublin["superseded_by"] is not None

    _erase(ledger, subject="u", message_id="m2")

    (current,) = _facts(ledger)
    assert current["id"] == dublin["id"]
    assert current["status"] == "current"
    assert current["superseded_by"] is None and current["valid"]["until"] is None
    assert columns_holding(SECRET_PLACE) == []


def test_erasure_is_audited_without_content(ledger):
    ledger.ingest("u", ("m1", f"I live in {SECRET_PLACE}.", "2026-03-04T10:00:00Z"))
    _erase(ledger, subject="u", message_id="m1")
    event = AuditEvent.objects.get(operation="erasure.message")
    assert str(Observation.objects.get(message_id="m1").pk) in event.object_ids
    assert event.source_count == 1
    _erase(ledger, subject="u")
    assert AuditEvent.objects.filter(operation="erasure.subject").count() == 1


def test_a_refused_erasure_is_audited_too(ledger):
    _erase(ledger, subject="nobody")
    _erase(ledger, subject=7)
    outcomes = list(
        AuditEvent.objects.filter(operation="erasure.request").values_list("outcome", flat=True)
    )
    assert outcomes == ["not_found", "invalid_request"]


def test_another_project_cannot_erase(ledger, other_ledger):
    ledger.ingest("u", ("m1", f"I live in {SECRET_PLACE}.", "2026-03-04T10:00:00Z"))
    _assert_not_found(_erase(other_ledger, subject="u", message_id="m1"))
    _assert_not_found(_erase(other_ledger, subject="u"))
    assert columns_holding(SECRET_PLACE)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "subject"),
        ({"subject": 5}, "subject"),
        ({"subject": "u", "message_id": 1}, "message_id"),
    ],
)
def test_malformed_erasures_name_the_field(ledger, body, field):
    response = _erase(ledger, **body)
    assert response.status_code == 400
    assert response.json()["error"]["details"]["field"] == field


def test_erased_facts_leave_the_inventory_and_cannot_be_retracted(ledger):
    ledger.ingest(
        "u",
        ("m1", f"I live in {SECRET_PLACE}.", "2026-03-04T10:00:00Z"),
        ("m2", "I like tea.", "2026-03-05T10:00:00Z"),
    )
    secret = next(f["id"] for f in _facts(ledger) if f["predicate"] == "lives_in")
    listed = lambda: [f["id"] for f in ledger.client.get("/v1/facts").json()["facts"]]  # noqa: E731
    assert secret in listed()

    _erase(ledger, subject="u", message_id="m1")

    assert secret not in listed() and len(listed()) == 1
    retract = ledger.client.post(f"/v1/facts/{secret}/retract", {"reason": "x"}, format="json")
    _assert_not_found(retract)


def test_erasing_a_subject_takes_authored_records_and_retraction_reasons(ledger):
    ledger.ingest("u", ("m1", "I like tea.", "2026-03-04T10:00:00Z"))
    tea = _facts(ledger)[0]["id"]
    retracted = ledger.client.post(
        f"/v1/facts/{tea}/retract",
        {"reason": f"They never liked it, said {SECRET_PLACE}."},
        format="json",
    )
    assert retracted.status_code == 200, retracted.content
    authored = {
        "subject": "u",
        "predicate": "lives_in",
        "statement": "Lives in Bramblefoot Close.",
        "value": "Bramblefoot Close",
        "authored_by": "support:ana",
    }
    assert ledger.client.post("/v1/facts", authored, format="json").status_code == 201
    assert columns_holding(SECRET_PLACE, "Bramblefoot")

    _erase(ledger, subject="u")

    assert columns_holding(SECRET_PLACE, "Bramblefoot") == []
    assert ledger.client.get("/v1/facts", {"subject": "u"}).json()["facts"] == []
    _assert_not_found(ledger.client.post("/v1/facts", authored, format="json"))
