"""Resolve's input is parsed by its serializer in the view: typed values, or invalid_citation."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from citations.api.serializers import ResolveIn
from citations.cursor import next_page
from citations.selectors import RESOLVE_DEFAULT_LIMIT, InvalidCitation, resolve_scope


def test_the_serializer_hands_the_view_typed_values():
    fact_id = uuid.uuid4()
    known_at = datetime(2026, 3, 4, 10, 11, 58, tzinfo=UTC)
    cursor = next_page(scope=resolve_scope(fact_id, known_at), position=[41])
    data = ResolveIn(
        data={
            "id": str(fact_id).upper(),
            "limit": 3,
            "as_of": {"known_at": "2026-03-04T10:11:58Z"},
            "after": cursor,
        }
    )
    assert data.is_valid()
    assert data.validated_data == {
        "fact_id": fact_id,
        "limit": 3,
        "known_at": known_at,
        "after": 41,
    }


def test_a_missing_limit_takes_the_default_and_page_one_starts_at_zero():
    fact_id = uuid.uuid4()
    data = ResolveIn(data={"id": str(fact_id)})
    assert data.is_valid()
    assert data.validated_data == {
        "fact_id": fact_id,
        "limit": RESOLVE_DEFAULT_LIMIT,
        "known_at": None,
        "after": 0,
    }


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (None, None),
        ([], None),
        ({"id": 7}, "id"),
        ({"id": str(uuid.uuid4()), "limit": None}, "limit"),
        ({"id": str(uuid.uuid4()), "as_of": {"known_at": "2026-03-04T10:11:58"}}, "as_of.known_at"),
        ({"id": str(uuid.uuid4()), "after": "not a cursor"}, "after"),
    ],
)
def test_every_fault_is_invalid_citation_with_the_field_at_fault(body, field):
    with pytest.raises(InvalidCitation) as refused:
        ResolveIn(data=body).is_valid()
    assert refused.value.details.get("field") == field
