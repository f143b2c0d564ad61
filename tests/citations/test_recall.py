"""POST /v1/recall: current facts by default, history on each time axis, and filters."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from citations.models import FactVersion

pytestmark = pytest.mark.django_db


def values(response) -> list[tuple[str, str]]:
    assert response.status_code == 200, response.content
    return [(f["value"], f["status"]) for f in response.json()["facts"]]


@pytest.fixture
def moved(ledger):
    """Dublin from March (learned first), then Cork from June (learned later)."""
    ledger.ingest("u", ("m1", "I moved to Dublin in March.", "2026-03-04T10:00:00Z"))
    learned_dublin = timezone.now()
    ledger.ingest("u", ("m2", "I moved to Cork in June.", "2026-06-10T09:00:00Z"))
    learned_cork = FactVersion.objects.get(fact__value="Cork").known_from
    return learned_dublin, learned_cork


def test_recall_defaults_to_current_on_both_axes(ledger, moved):
    response = ledger.recall("u")
    assert values(response) == [("Cork", "current")]
    fact = response.json()["facts"][0]
    assert set(fact) >= {"id", "version", "predicate", "statement", "status", "valid", "known"}


def test_valid_at_shows_what_was_true_then_as_believed_now(ledger, moved):
    response = ledger.recall("u", as_of={"valid_at": "2026-04-15T00:00:00Z"})
    assert values(response) == [("Dublin", "validity_closed")]
    assert response.json()["facts"][0]["valid"]["until"] == "2026-06-01T00:00:00Z"
    assert values(ledger.recall("u", as_of={"valid_at": "2026-02-01T00:00:00Z"})) == []


def test_known_at_shows_what_was_believed_then_without_the_end_learned_later(ledger, moved):
    learned_dublin, learned_cork = moved
    between = learned_dublin + (learned_cork - learned_dublin) / 2
    response = ledger.recall(
        "u", as_of={"known_at": between.isoformat(), "valid_at": "2026-07-01T00:00:00Z"}
    )
    # At that known time Dublin's end date (June) had not been learned.
    assert values(response) == [("Dublin", "current")]
    fact = response.json()["facts"][0]
    assert fact["valid"]["until"] is None
    assert fact["known"]["until"] is None
    assert fact["superseded_by"] is None


def test_known_at_before_anything_was_learned_is_empty(ledger, moved):
    before = (timezone.now() - timedelta(days=1)).isoformat()
    assert values(ledger.recall("u", as_of={"known_at": before})) == []


def test_known_at_now_and_valid_at_later_sees_the_closed_interval(ledger, moved):
    response = ledger.recall(
        "u", as_of={"known_at": timezone.now().isoformat(), "valid_at": "2026-07-01T00:00:00Z"}
    )
    assert values(response) == [("Cork", "current")]


def test_predicate_and_query_filter(ledger):
    ledger.ingest(
        "u",
        ("m1", "I live in Galway. I like sea swimming. I like tea.", "2026-03-04T10:00:00Z"),
    )
    assert [v for v, _ in values(ledger.recall("u", predicate="likes"))] in (
        ["sea swimming", "tea"],
        ["tea", "sea swimming"],
    )
    assert values(ledger.recall("u", query="SWIM")) == [("sea swimming", "current")]
    assert values(ledger.recall("u", predicate="lives_in", query="galway")) == [
        ("Galway", "current")
    ]


def test_a_second_project_cannot_see_the_first_projects_facts(ledger, other_ledger):
    ledger.ingest("u", ("m1", "I live in Galway.", "2026-03-04T10:00:00Z"))
    assert values(other_ledger.recall("u")) == []
    # The same message ID in another project is a different observation, not a replay.
    response = other_ledger.ingest("u", ("m1", "I live in Sligo.", "2026-03-04T10:00:00Z"))
    assert response.status_code == 201
    assert values(other_ledger.recall("u")) == [("Sligo", "current")]
    assert values(ledger.recall("u")) == [("Galway", "current")]


def test_unknown_subject_recalls_nothing(ledger):
    assert values(ledger.recall("nobody")) == []


def test_recall_rejects_an_unknown_predicate(ledger):
    response = ledger.recall("u", predicate="favourite_planet")
    assert response.status_code == 400
    assert response.json()["error"]["details"]["field"] == "predicate"


def test_as_of_times_are_instants_with_time_zones(ledger, moved):
    response = ledger.recall("u", as_of={"valid_at": datetime(2026, 4, 1, tzinfo=UTC).isoformat()})
    assert values(response) == [("Dublin", "validity_closed")]


@pytest.mark.parametrize("field", ["valid_at", "known_at"])
def test_as_of_times_without_an_offset_are_refused(ledger, moved, field):
    response = ledger.recall("u", as_of={field: "2026-04-01T00:00:00"})
    assert response.status_code == 400
    assert response.json()["error"]["details"]["field"] == f"as_of.{field}"
