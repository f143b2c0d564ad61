"""Evidence membership is append-only in known time: a split never moves a source in place."""

from __future__ import annotations

import pytest
from django.db import DatabaseError, transaction
from django.utils import timezone

from citations.models import Evidence, Fact

pytestmark = pytest.mark.django_db


def _split(ledger):
    """Dublin said twice, then a late message: Cork from February, between the two."""
    first = ledger.ingest("u", ("m1", "I live in Dublin.", "2026-01-05T10:00:00Z"))
    dublin = first.json()["facts"][0]["id"]
    ledger.ingest("u", ("m3", "I live in Dublin!", "2026-03-05T10:00:00Z"))
    before = timezone.now()
    late = ledger.ingest("u", ("m2", "I moved to Cork in February.", "2026-02-10T10:00:00Z"))
    assert late.status_code == 201
    split = next(
        f for f in late.json()["facts"] if f["change"] == "created" and f["value"] == "Dublin"
    )
    return dublin, split["id"], before


def _sources(body) -> list[str]:
    return [row["source_message_id"] for row in body["evidence"]]


def test_a_split_leaves_the_old_membership_visible_as_of_before_it(ledger):
    dublin, split, before = _split(ledger)
    assert _sources(ledger.resolve(dublin).json()) == ["m1"]
    assert _sources(ledger.resolve(split).json()) == ["m3"]
    then = ledger.resolve(dublin, as_of={"known_at": before.isoformat()})
    assert then.status_code == 200
    assert _sources(then.json()) == ["m1", "m3"]
    assert then.json()["status"] == "current"
    assert ledger.resolve(split, as_of={"known_at": before.isoformat()}).status_code == 404


def test_moving_a_source_closes_its_row_and_writes_a_new_one(ledger):
    dublin, split, _ = _split(ledger)
    rows = Evidence.objects.filter(observation__message_id="m3").order_by("pk")
    assert [(str(r.fact_id), r.known_until is None) for r in rows] == [
        (dublin, False),
        (split, True),
    ]


def test_a_split_off_fact_takes_its_statement_from_the_message(ledger):
    _, split, _ = _split(ledger)
    assert Fact.objects.get(pk=split).statement == "I live in Dublin!"


@pytest.mark.parametrize(
    "change",
    [
        {"fact_id": None},  # filled in below: moving to another fact
        {"byte_end": 5},
        {"quote_sha256": "0" * 64},
        {"created_at": timezone.now()},
        {"kind": "web"},  # migration 0008 froze the kind too
    ],
)
def test_the_database_refuses_any_change_but_closing_known_time(ledger, change):
    dublin, split, _ = _split(ledger)
    if "fact_id" in change:
        change = {"fact_id": split}
    row = Evidence.objects.filter(fact_id=dublin, known_until__isnull=True)
    with pytest.raises(DatabaseError), transaction.atomic():
        row.update(**change)
    closed = Evidence.objects.filter(fact_id=dublin, known_until__isnull=False)
    with pytest.raises(DatabaseError), transaction.atomic():
        closed.update(known_until=timezone.now())
    assert row.update(known_until=timezone.now()) == 1


def test_as_of_known_at_must_be_an_instant_with_an_offset(ledger):
    dublin, _, _ = _split(ledger)
    for as_of, field in [
        ({"known_at": "2026-03-01T00:00:00"}, "as_of.known_at"),
        ({"known_at": 5}, "as_of.known_at"),
        ({"valid_at": "2026-03-01T00:00:00Z"}, "as_of"),
        ("2026-03-01T00:00:00Z", "as_of"),
    ]:
        response = ledger.resolve(dublin, as_of=as_of)
        assert response.status_code == 400, as_of
        assert response.json()["error"]["code"] == "invalid_citation"
        assert response.json()["error"]["details"]["field"] == field


def test_a_cursor_of_the_present_is_refused_for_a_past_view(ledger):
    for n in range(3):
        response = ledger.ingest("u", (f"m{n}", "I like tea.", f"2026-03-0{n + 1}T10:00:00Z"))
    fact_id = response.json()["facts"][0]["id"]
    page = ledger.resolve(fact_id, limit=1).json()
    past = ledger.resolve(
        fact_id, limit=1, after=page["next"], as_of={"known_at": timezone.now().isoformat()}
    )
    assert past.status_code == 400
    assert past.json()["error"]["details"]["field"] == "after"
