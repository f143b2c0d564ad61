"""A correction in a later message retracts the mistaken fact, replaced by the message's own."""

from __future__ import annotations

import pytest

from citations.models import Evidence, FactVersion, Observation, Retraction
from tests.citations.worker import run_worker, uses_worker

pytestmark = pytest.mark.django_db


def current(ledger, subject):
    body = ledger.recall(subject).json()
    return {(f["predicate"], f["value"]) for f in body["facts"]}


def test_i_meant_pecans_not_peanuts_retracts_peanuts_with_pecans_as_replacement(ledger):
    ledger.ingest("u", ("m1", "I'm allergic to peanuts.", "2026-01-05T08:00:00Z"))
    response = ledger.ingest(
        "u", ("m2", "wait I meant pecans, not peanuts!", "2026-01-06T19:00:00Z")
    )
    assert response.status_code == 201, response.json()
    assert current(ledger, "u") == {("allergic_to", "pecans")}
    retraction = Retraction.objects.get()
    assert retraction.fact.value == "peanuts"
    assert retraction.replacement.value == "pecans"
    assert retraction.replacement.predicate == "allergic_to"
    # The replacement's evidence is the correcting message's clause, at its bytes.
    evidence = Evidence.objects.get(fact=retraction.replacement)
    assert evidence.observation == Observation.objects.get(message_id="m2")
    text = b"wait I meant pecans, not peanuts!"
    assert text[evidence.byte_start : evidence.byte_end] == b"wait I meant pecans, not peanuts"
    # The replacement holds from when the mistaken fact did.
    resolved = ledger.resolve(retraction.replacement_id).json()
    assert resolved["valid"]["from"] == "2026-01-05T08:00:00Z"
    assert resolved["status"] == "current"


def test_a_place_corrected_with_actually_not_replaces_the_functional_fact(ledger):
    ledger.ingest("u", ("m1", "I'm in Chennai so it's late here.", "2026-01-19T01:00:00Z"))
    ledger.ingest("u", ("m2", "I live in Pune actually, not Chennai.", "2026-01-19T01:05:00Z"))
    assert current(ledger, "u") == {("lives_in", "Pune")}
    assert Retraction.objects.get().fact.value == "Chennai"


def test_a_correction_with_nothing_to_correct_writes_nothing(ledger):
    response = ledger.ingest(
        "u", ("m1", "Sorry, I meant cashews, not walnuts.", "2026-01-05T08:00:00Z")
    )
    assert response.json()["facts"] == []
    assert not Retraction.objects.exists()


def test_a_correction_in_the_same_request_follows_the_fact_it_corrects(ledger):
    ledger.ingest(
        "u",
        ("m1", "My favourite colour is teal.", "2026-03-01T09:00:00Z"),
        ("m2", "Actually, make that mustard yellow.", "2026-03-01T09:01:00Z"),
    )
    assert current(ledger, "u") == {("favourite_colour", "mustard yellow")}
    assert Retraction.objects.get().fact.value == "teal"


@uses_worker
def test_a_project_rebuild_keeps_the_correction(ledger):
    ledger.ingest("u", ("m1", "I'm allergic to peanuts.", "2026-01-05T08:00:00Z"))
    ledger.ingest("u", ("m2", "wait I meant pecans, not peanuts!", "2026-01-06T19:00:00Z"))
    ledger.ingest("u", ("m3", "I live in Pune actually, not Chennai.", "2026-01-07T19:00:00Z"))
    before = current(ledger, "u")
    response = ledger.client.post("/v1/rebuilds", {"scope": "project"}, format="json")
    assert response.status_code == 202
    generation = response.json()["generation"]["id"]
    run_worker()
    done = ledger.client.get(f"/v1/rebuilds/{generation}").json()
    assert done["generation"]["state"] == "done"
    facts = ledger.recall("u").json()["facts"]
    assert {f["generation"] for f in facts} == {generation}
    assert {(f["predicate"], f["value"]) for f in facts} == before
    assert {("allergic_to", "pecans"), ("lives_in", "Pune")} <= before
    pecans = next(f for f in facts if f["value"] == "pecans")
    # Read again with the corrected fact's predicate and start.
    assert ledger.resolve(pecans["id"]).json()["valid"]["from"] == "2026-01-05T08:00:00Z"


def test_facts_after_a_correction_in_the_same_request_are_known_after_it(ledger):
    response = ledger.ingest(
        "u",
        ("m1", "I live in Oslo.", "2026-03-01T09:00:00Z"),
        ("m2", "Actually, I live in Bergen.", "2026-03-01T09:01:00Z"),
        ("m3", "I moved to Tromsø last week.", "2026-03-20T09:00:00Z"),
    )
    assert response.status_code == 201, response.json()
    assert current(ledger, "u") == {("lives_in", "Tromsø")}
    retraction = Retraction.objects.get()
    bergen = retraction.replacement
    versions = list(FactVersion.objects.filter(fact=bergen).order_by("seq"))
    # Tromsø closed Bergen's validity after Bergen was written, never before.
    assert versions[-1].valid_until is not None
    assert all(v.known_until is None or v.known_from <= v.known_until for v in versions)
    assert versions[-1].known_from >= retraction.retracted_at
    # The response tells each fact's status once the whole request is applied.
    statuses = {f["value"]: f["status"] for f in response.json()["facts"]}
    assert statuses["Oslo"] == "retracted"
    assert statuses["Tromsø"] == "current"
