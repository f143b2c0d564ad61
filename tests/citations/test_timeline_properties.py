"""Property tests: supersession gives one timeline whatever order the messages arrive in."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from citations.extract.intervals import Interval
from citations.models import Evidence, FactVersion
from citations.services import MessageIn, observations_ingest
from tests.citations.factories import ProjectFactory

pytestmark = pytest.mark.django_db

CITIES = ["Dublin", "Cork", "Galway", "Sligo", "Derry"]
MONTHS = ["January", "March", "May", "July", "September", "November"]


@st.composite
def moves(draw):
    """Moves and plain statements of where one lives, each in its own message."""
    count = draw(st.integers(min_value=1, max_value=5))
    months = draw(st.lists(st.integers(0, 5), min_size=count, max_size=count, unique=True))
    messages = []
    for n, month in enumerate(months):
        city = CITIES[draw(st.integers(0, len(CITIES) - 1))]
        sent = datetime(2025, 1 + 2 * month, 5, tzinfo=UTC) + timedelta(hours=n)
        # Dated moves start on the 1st; undated statements hold from the message time.
        dated = draw(st.booleans())
        text = f"I moved to {city} in {MONTHS[month]}." if dated else f"I live in {city}."
        messages.append(
            MessageIn(
                message_id=f"m{n}",
                role="user",
                text=text,
                occurred_at=sent,
            )
        )
    return messages, draw(st.permutations(messages))


def believed_timeline(project) -> list[tuple]:
    rows = FactVersion.objects.filter(project=project, known_until__isnull=True)
    return sorted((v.fact.value, v.valid_from, v.valid_until, v.status) for v in rows)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(moves())
def test_arrival_order_never_changes_the_believed_timeline(db, case):
    in_order, shuffled = case
    timelines = []
    for messages in (sorted(in_order, key=lambda m: m.occurred_at), shuffled):
        project = ProjectFactory()
        for message in messages:
            observations_ingest(project=project, subject_id="u", messages=[message], actor="test")
        timelines.append(believed_timeline(project))
    assert timelines[0] == timelines[1]


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(moves())
def test_believed_functional_facts_never_overlap_and_only_the_last_is_open(db, case):
    _, shuffled = case
    project = ProjectFactory()
    for message in shuffled:
        observations_ingest(project=project, subject_id="u", messages=[message], actor="test")
    versions = FactVersion.objects.filter(project=project, known_until__isnull=True)
    intervals = [
        Interval(v.valid_from, v.valid_until, v.valid_from_inclusive, v.valid_until_inclusive)
        for v in versions
    ]
    for i, a in enumerate(intervals):
        for b in intervals[i + 1 :]:
            assert not a.overlaps(b)
    assert sum(1 for v in versions if v.valid_until is None) == 1
    for version in versions:
        if version.valid_until is not None and version.valid_until > version.valid_from:
            assert version.superseded_by_id is not None


@st.composite
def same_instant_statements(draw):
    """Statements of where one lives, several sent at the same instant, in any arrival order."""
    count = draw(st.integers(min_value=2, max_value=5))
    instants = [datetime(2025, 3, 5, 9, tzinfo=UTC), datetime(2025, 7, 5, 9, tzinfo=UTC)]
    messages = []
    for n in range(count):
        city = CITIES[draw(st.integers(0, 2))]
        text = draw(st.sampled_from([f"I live in {city}.", f"I moved to {city} in March."]))
        messages.append(
            MessageIn(
                message_id=f"m{n}",
                role="user",
                text=text,
                occurred_at=instants[draw(st.integers(0, 1))],
            )
        )
    return messages, draw(st.permutations(messages))


def full_timeline(project) -> list[tuple]:
    """Believed versions with their links and sources, named by value, not by random ID."""
    rows = []
    for v in FactVersion.objects.filter(project=project, known_until__isnull=True):
        successor = None
        if v.superseded_by_id is not None:
            after = FactVersion.objects.get(fact_id=v.superseded_by_id, known_until__isnull=True)
            successor = (after.fact.value, after.valid_from)
        sources = sorted(
            Evidence.objects.filter(fact=v.fact, known_until__isnull=True).values_list(
                "observation__message_id", flat=True
            )
        )
        rows.append((v.fact.value, v.valid_from, v.valid_until, v.status, successor, sources))
    return sorted(rows, key=repr)


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(same_instant_statements())
def test_messages_sent_at_the_same_instant_give_one_timeline_in_any_arrival_order(db, case):
    in_key_order, shuffled = case
    timelines = []
    for messages in (in_key_order, shuffled):
        project = ProjectFactory()
        for message in messages:
            observations_ingest(project=project, subject_id="u", messages=[message], actor="test")
        timelines.append(full_timeline(project))
    assert timelines[0] == timelines[1]
