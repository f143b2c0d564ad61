"""Writes place a request's (or a rebuild's) statements together: the statements a write
sends to the database do not grow with its number of messages, and the timeline is the
one the messages would give sent one by one."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from citations.extract.extractor import EXTRACTOR_VERSION
from citations.models import Generation, Subject
from citations.services import MessageIn, observations_ingest
from citations.services.rebuilds import subject_rebuild
from tests.citations.factories import ProjectFactory
from tests.citations.test_timeline_properties import full_timeline, moves, same_instant_statements

pytestmark = pytest.mark.django_db

CITIES = ["Dublin", "Cork", "Galway", "Lisbon"]


def _messages(count: int, prefix: str) -> list[MessageIn]:
    """Likes, and every fifth message a move dated in a month before it (a supersession)."""
    start = datetime(2025, 1, 5, tzinfo=UTC)
    messages = []
    for n in range(count):
        sent = start + timedelta(days=3 * n)
        if n % 5 == 4:
            text = f"I moved to {CITIES[n % 4]} in {sent.strftime('%B')}."
        else:
            text = f"I like hobby {prefix}{n}. It is fun."
        messages.append(
            MessageIn(message_id=f"{prefix}{n}", role="user", text=text, occurred_at=sent)
        )
    return messages


def _statements_of_ingest(project, subject: str, messages: list[MessageIn]) -> int:
    with CaptureQueriesContext(connection) as queries:
        result = observations_ingest(
            project=project, subject_id=subject, messages=messages, actor="test"
        )
    assert sum(item.created for item in result.observations) == len(messages)
    return len(queries.captured_queries)


def test_ingest_sends_as_many_statements_for_a_hundred_messages_as_for_five():
    project = ProjectFactory()
    # The subjects already have a timeline: the new messages supersede and restate it.
    for subject in ("a", "b"):
        observations_ingest(
            project=project,
            subject_id=subject,
            messages=_messages(10, f"{subject}-old"),
            actor="test",
        )
    few = _statements_of_ingest(project, "a", _messages(5, "a-new"))
    many = _statements_of_ingest(project, "b", _messages(100, "b-new"))
    # A bulk insert splits at the backend's parameter limit (999 on SQLite): a few more
    # statements, never one or more per message.
    assert many - few <= 8, (few, many)
    assert few <= 25


def test_a_subject_rebuild_sends_as_many_statements_for_a_hundred_messages_as_for_five():
    project = ProjectFactory()
    counts = []
    for subject, count in (("a", 5), ("b", 100)):
        observations_ingest(
            project=project, subject_id=subject, messages=_messages(count, subject), actor="test"
        )
        generation = Generation.objects.create(
            project=project,
            kind=Generation.Kind.PROJECT_REBUILD,
            extractor_version=EXTRACTOR_VERSION,
        )
        with CaptureQueriesContext(connection) as queries:
            done = subject_rebuild(
                generation=generation, subject=Subject.objects.get(external_id=subject)
            )
        assert done.admitted == done.retired
        counts.append(len(queries.captured_queries))
    assert counts[1] - counts[0] <= 8, counts


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.one_of(moves(), same_instant_statements()))
def test_one_request_and_a_rebuild_give_the_timeline_of_messages_sent_one_by_one(db, case):
    in_order, shuffled = case
    one_by_one = ProjectFactory()
    for message in sorted(in_order, key=lambda m: (m.occurred_at, m.message_id)):
        observations_ingest(project=one_by_one, subject_id="u", messages=[message], actor="test")
    expected = full_timeline(one_by_one)

    together = ProjectFactory()
    observations_ingest(project=together, subject_id="u", messages=shuffled, actor="test")
    assert full_timeline(together) == expected

    generation = Generation.objects.create(
        project=one_by_one,
        kind=Generation.Kind.PROJECT_REBUILD,
        extractor_version=EXTRACTOR_VERSION,
    )
    subject_rebuild(generation=generation, subject=Subject.objects.get(project=one_by_one))
    assert full_timeline(one_by_one) == expected
