"""POST /v1/facts/{id}/retract: withdrawal and correction, once, audited, never in place."""

from __future__ import annotations

import json

import pytest

from citations.models import AuditEvent, FactVersion, Retraction

pytestmark = pytest.mark.django_db


def fact_of(response, value):
    assert response.status_code == 201, response.json()
    return next(f["id"] for f in response.json()["facts"] if f["value"] == value)


def retract(ledger, fact_id, **body):
    return ledger.client.post(
        f"/v1/facts/{fact_id}/retract", {"reason": "wrong", **body}, format="json"
    )


def test_a_retraction_records_who_when_why_and_closes_known_time(ledger):
    tea = fact_of(ledger.ingest("u", ("m1", "I like tea.", "2026-03-04T10:00:00Z")), "tea")
    response = retract(ledger, tea, reason="The user was joking.")
    assert response.status_code == 200
    body = response.json()
    assert body["id"] == tea
    assert body["status"] == "retracted"
    assert body["known"]["until"] is not None
    assert body["retraction"]["retracted_by"].startswith("credential:")
    assert body["retraction"]["reason"] == "The user was joking."
    assert body["retraction"]["replacement"] is None
    assert body["retraction"]["replacement_id"] is None
    assert body["retraction"]["retracted_at"] == body["known"]["until"]
    assert [row["quote"] for row in body["evidence"]] == ["I like tea"]
    assert ledger.resolve(tea).json() == body
    assert ledger.recall("u").json()["facts"] == []
    # What was believed before stays: the version before the retraction is kept whole.
    first = FactVersion.objects.get(fact_id=tea, seq=1)
    assert first.known_until is not None and first.retraction_id is not None


def test_a_second_retraction_is_409_and_leaves_the_first_untouched(ledger):
    tea = fact_of(ledger.ingest("u", ("m1", "I like tea.", "2026-03-04T10:00:00Z")), "tea")
    first = retract(ledger, tea, reason="first").json()
    again = retract(
        ledger, tea, reason="second", replacement={"predicate": "likes", "statement": "Coffee."}
    )
    assert again.status_code == 409
    assert again.json()["error"]["code"] == "already_retracted"
    assert Retraction.objects.get().reason == "first"
    assert ledger.resolve(tea).json() == first
    outcomes = AuditEvent.objects.filter(operation="fact.retract").order_by("seq")
    assert [event.outcome for event in outcomes] == ["ok", "already_retracted"]


def test_a_correction_names_a_replacement_that_resolves_current(ledger):
    dublin = fact_of(
        ledger.ingest("u", ("m1", "I moved to Dublin in March.", "2026-03-04T10:00:00Z")),
        "Dublin",
    )
    body = retract(
        ledger,
        dublin,
        reason="Misheard.",
        replacement={"statement": "I moved to Cork in March.", "value": "Cork"},
    ).json()
    # DESIGN.md's pin: retraction.replacement is the new fact's ID, a string.
    replacement_id = body["retraction"]["replacement"]
    assert isinstance(replacement_id, str)
    assert body["retraction"]["replacement_id"] == replacement_id
    assert ledger.resolve(dublin).json()["retraction"]["replacement"] == replacement_id
    exported = [
        json.loads(line)
        for line in b"".join(
            ledger.client.get("/v1/subjects/u/export").streaming_content
        ).splitlines()
    ]
    (retraction,) = [line for line in exported if line["type"] == "retraction"]
    assert (retraction["replacement"], retraction["replacement_id"]) == (replacement_id,) * 2
    replacement = ledger.resolve(replacement_id).json()
    assert replacement["status"] == "current"
    assert replacement["predicate"] == "lives_in"
    assert replacement["statement"] == "I moved to Cork in March."
    assert replacement["valid"]["from"] == "2026-03-01T00:00:00Z"
    assert replacement["evidence"][0]["authored_by"] == body["retraction"]["retracted_by"]
    assert [f["value"] for f in ledger.recall("u").json()["facts"]] == ["Cork"]


def test_retracting_a_supersession_lets_the_earlier_value_hold_again(ledger):
    dublin = fact_of(
        ledger.ingest("u", ("m1", "I moved to Dublin in March.", "2026-03-04T10:00:00Z")),
        "Dublin",
    )
    cork = fact_of(
        ledger.ingest("u", ("m2", "I moved to Cork in June.", "2026-06-04T10:00:00Z")), "Cork"
    )
    assert ledger.resolve(dublin).json()["status"] == "validity_closed"
    retract(ledger, cork)
    restored = ledger.resolve(dublin).json()
    assert restored["status"] == "current"
    assert restored["superseded_by"] is None


def test_a_split_restatement_merges_back_and_its_fact_is_knowledge_closed(ledger):
    dublin = fact_of(
        ledger.ingest("u", ("m1", "I live in Dublin.", "2026-01-05T10:00:00Z")), "Dublin"
    )
    ledger.ingest("u", ("m3", "I live in Dublin!", "2026-03-05T10:00:00Z"))
    late = ledger.ingest("u", ("m2", "I moved to Cork in February.", "2026-02-10T10:00:00Z"))
    cork = fact_of(late, "Cork")
    split = next(
        f["id"] for f in late.json()["facts"] if f["value"] == "Dublin" and f["change"] == "created"
    )
    retract(ledger, cork)
    merged = ledger.resolve(split).json()
    assert merged["status"] == "knowledge_closed"
    assert merged["retraction"] is None
    whole = ledger.resolve(dublin).json()
    assert whole["status"] == "current"
    assert [row["source_message_id"] for row in whole["evidence"]] == ["m1", "m3"]


def test_retracting_another_projects_fact_is_the_same_404(ledger, other_ledger):
    tea = fact_of(ledger.ingest("u", ("m1", "I like tea.", "2026-03-04T10:00:00Z")), "tea")
    theirs = retract(other_ledger, tea)
    unknown = retract(other_ledger, "4b7f0c1e-2d9a-4e3b-8f61-0a5c9e2d7b14")
    malformed = retract(other_ledger, "not-an-id")
    for response in (theirs, unknown, malformed):
        assert response.status_code == 404
        assert response.json()["error"] == unknown.json()["error"]
    assert ledger.resolve(tea).json()["status"] == "current"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "reason"),
        ({"reason": 5}, "reason"),
        ({"reason": "x", "replacement": {"statement": 12.5}}, "replacement.statement"),
        (
            {"reason": "x", "replacement": {"statement": "x", "predicate": "owns"}},
            "replacement.predicate",
        ),
        (
            {
                "reason": "x",
                "replacement": {
                    "statement": "x",
                    "valid_from": "2026-05-01T00:00:00Z",
                    "valid_until": "2026-04-01T00:00:00Z",
                },
            },
            "replacement.valid_until",
        ),
    ],
)
def test_a_malformed_retraction_is_refused_and_changes_nothing(ledger, body, field):
    tea = fact_of(ledger.ingest("u", ("m1", "I like tea.", "2026-03-04T10:00:00Z")), "tea")
    response = ledger.client.post(f"/v1/facts/{tea}/retract", body, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["details"]["field"] == field
    assert not Retraction.objects.exists()


def test_recall_as_of_before_the_retraction_still_shows_the_fact(ledger):
    from django.utils import timezone

    tea = fact_of(ledger.ingest("u", ("m1", "I like tea.", "2026-03-04T10:00:00Z")), "tea")
    before = timezone.now().isoformat()
    retract(ledger, tea)
    then = ledger.recall("u", as_of={"known_at": before}).json()["facts"]
    assert [(f["id"], f["status"], f["retraction"]) for f in then] == [(tea, "current", None)]
    assert ledger.recall("u").json()["facts"] == []
