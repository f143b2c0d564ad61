"""The database keeps the ledger's invariants, whatever the code above it does."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import DatabaseError, IntegrityError, transaction

from citations.models import FactVersion
from tests.citations.factories import FactFactory, FactVersionFactory, SubjectFactory

pytestmark = pytest.mark.django_db

MARCH = datetime(2026, 3, 1, tzinfo=UTC)
JUNE = datetime(2026, 6, 1, tzinfo=UTC)
SEPTEMBER = datetime(2026, 9, 1, tzinfo=UTC)


def refused(**kwargs):
    with pytest.raises(IntegrityError), transaction.atomic():
        FactVersionFactory(**kwargs)


@pytest.mark.postgres
def test_exclusion_constraint_refuses_overlapping_believed_functional_facts():
    subject = SubjectFactory()
    common = {"fact__project": subject.project, "fact__subject": subject}
    FactVersionFactory(
        **common,
        valid_from=MARCH,
        valid_until=SEPTEMBER,
        status="validity_closed",
        superseded_by=None,
    )
    # Closed intervals overlapping in June: only the exclusion constraint can tell.
    refused(
        **common,
        fact__value="Cork",
        valid_from=JUNE,
        valid_until=SEPTEMBER,
        status="validity_closed",
    )
    # Touching at the boundary ([March, September) then [September, ...)) is fine.
    FactVersionFactory(**common, fact__value="Cork", valid_from=SEPTEMBER)


@pytest.mark.postgres
def test_exclusion_constraint_ignores_versions_no_longer_believed():
    subject = SubjectFactory()
    common = {"fact__project": subject.project, "fact__subject": subject}
    FactVersionFactory(
        **common,
        valid_from=MARCH,
        known_until=datetime(2026, 3, 5, tzinfo=UTC),
        status="knowledge_closed",
    )
    FactVersionFactory(**common, fact__value="Cork", valid_from=JUNE)


def test_two_open_believed_values_of_a_functional_predicate_are_refused():
    subject = SubjectFactory()
    FactVersionFactory(fact__project=subject.project, fact__subject=subject, valid_from=MARCH)
    refused(
        fact__project=subject.project, fact__subject=subject, fact__value="Cork", valid_from=JUNE
    )


def test_multi_valued_predicates_may_hold_many_open_values():
    subject = SubjectFactory()
    for value in ["tea", "coffee"]:
        FactVersionFactory(
            fact__project=subject.project,
            fact__subject=subject,
            fact__predicate="likes",
            fact__functional=False,
            fact__value=value,
            valid_from=MARCH,
        )
    assert FactVersion.objects.filter(predicate="likes").count() == 2


@pytest.mark.parametrize(
    "fields",
    [
        {"status": "validity_closed"},  # open validity cannot be validity_closed
        {"status": "current", "valid_until": JUNE},
        {"status": "current", "known_until": JUNE},
        {"status": "knowledge_closed"},  # open known interval
        {"status": "retracted", "known_until": JUNE},  # no retraction recorded
        {"status": "nonsense"},
        {"valid_until": datetime(2026, 2, 1, tzinfo=UTC), "status": "validity_closed"},
        {"known_until": datetime(2026, 3, 1, tzinfo=UTC), "status": "knowledge_closed"},
    ],
)
def test_status_and_interval_order_are_checked_by_the_database(fields):
    refused(valid_from=MARCH, **fields)


def test_supersession_links_come_together_and_close_validity():
    fact = FactFactory()
    other = FactFactory(project=fact.project, subject=fact.subject, value="Cork")
    refused(fact=fact, valid_from=MARCH, superseded_by=other, status="current")
    refused(
        fact=fact, valid_from=MARCH, valid_until=JUNE, superseded_by=other, status="validity_closed"
    )


def test_only_one_believed_version_per_fact():
    version = FactVersionFactory(valid_from=MARCH)
    refused(fact=version.fact, seq=2, valid_from=MARCH, fact__value="x")


def test_a_stored_version_only_ever_has_its_known_interval_closed():
    version = FactVersionFactory(valid_from=MARCH)
    rows = FactVersion.objects.filter(pk=version.pk)
    with pytest.raises(DatabaseError), transaction.atomic():
        rows.update(valid_from=JUNE)
    with pytest.raises(DatabaseError), transaction.atomic():
        rows.update(valid_until=JUNE, status="validity_closed")
    rows.update(known_until=JUNE, status="knowledge_closed")
    # Once closed, a version is frozen whole.
    with pytest.raises(DatabaseError), transaction.atomic():
        rows.update(known_until=SEPTEMBER)
