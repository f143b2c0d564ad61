"""Fact versions over known time: believe something new without rewriting what was believed."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db.models import Max, QuerySet
from django.utils import timezone

from citations.extract.intervals import Interval, derive_status
from citations.models import Fact, FactVersion, Observation, Project, Subject


def known_now(project: Project, subject: Subject) -> datetime:
    """The known time of this change, read under the subject lock.

    Known time must never run backwards for a subject, even when another server's
    clock is a little ahead: a change is never known before the one it follows.
    """
    bounds = (
        FactVersion.objects.for_project(project)
        .filter(subject=subject)
        .aggregate(opened=Max("known_from"), closed=Max("known_until"))
    )
    moments: list[datetime] = [moment for moment in bounds.values() if moment]
    return max([timezone.now(), *moments])


def believed_versions(project: Project, subject: Subject, predicate: str) -> QuerySet[FactVersion]:
    """The versions of a subject's facts for one predicate that the ledger believes now."""
    return (
        FactVersion.objects.for_project(project)
        .filter(subject=subject, predicate=predicate, known_until__isnull=True)
        .select_related("fact")
        .order_by("valid_from", "seq")
    )


def current_status(version: FactVersion) -> str:
    return derive_status(
        valid=version.valid_interval,
        known=version.known_interval,
        retracted=version.retraction_id is not None,
        reinterpreted=version.reinterpreted_by_id is not None,
    )


def first_version(
    *,
    fact: Fact,
    now: datetime,
    valid: Interval,
    precision: str,
    closed_by: tuple[Fact, Observation] | None = None,
) -> FactVersion:
    """The first believed version of a new fact; ``closed_by`` when a successor ends it."""
    version = unsaved_first_version(
        fact=fact, now=now, valid=valid, precision=precision, closed_by=closed_by
    )
    version.save()
    return version


def unsaved_first_version(
    *,
    fact: Fact,
    now: datetime,
    valid: Interval,
    precision: str,
    closed_by: tuple[Fact, Observation] | None = None,
) -> FactVersion:
    """``first_version`` not yet saved, for writers that store many at once."""
    version = FactVersion(
        fact=fact,
        seq=1,
        project=fact.project,
        subject=fact.subject,
        predicate=fact.predicate,
        functional=fact.functional,
        valid_from=valid.start,
        valid_until=valid.end,
        valid_from_inclusive=valid.start_inclusive,
        valid_until_inclusive=valid.end_inclusive,
        valid_precision=precision,
        known_from=now,
    )
    if closed_by is not None:
        version.superseded_by, version.supersession_source_observation = closed_by
    version.status = current_status(version)
    return version


def close_validity(
    *, version: FactVersion, at: datetime, by_fact: Fact, source: Observation, now: datetime
) -> FactVersion:
    """Record that ``version``'s fact stopped being true at ``at``, superseded by ``by_fact``."""
    valid = version.valid_interval.closed_at(max(at, version.valid_from))
    return revise(
        version,
        now=now,
        valid_until=valid.end,
        valid_until_inclusive=valid.end_inclusive,
        superseded_by=by_fact,
        supersession_source_observation=source,
    )


def close_knowledge(version: FactVersion, *, now: datetime, **reason: Any) -> FactVersion:
    """Stop believing ``version`` at ``now``; ``reason`` sets the retraction or rebuild."""
    version.known_until = now
    for name, value in reason.items():
        setattr(version, name, value)
    version.status = current_status(version)
    version.save(update_fields=["known_until", "status", *reason])
    return version


def revise(version: FactVersion, *, now: datetime, **changes: Any) -> FactVersion:
    """Believe something new about a fact from ``now`` on, keeping what was believed before.

    Known time is append-only: the believed version's known interval closes at ``now``
    and a new version carries the change. The database refuses any other update of a
    stored version (migration 0003), so even a version first believed in this same
    transaction is closed, not corrected: its known interval is then empty.
    """
    close_knowledge(version, now=now)
    revised = FactVersion(
        fact=version.fact,
        seq=version.seq + 1,
        project=version.project,
        subject=version.subject,
        predicate=version.predicate,
        functional=version.functional,
        valid_from=version.valid_from,
        valid_until=version.valid_until,
        valid_from_inclusive=version.valid_from_inclusive,
        valid_until_inclusive=version.valid_until_inclusive,
        valid_precision=version.valid_precision,
        superseded_by=version.superseded_by,
        supersession_source_observation=version.supersession_source_observation,
        known_from=now,
    )
    for name, value in changes.items():
        setattr(revised, name, value)
    revised.status = current_status(revised)
    revised.save()
    return revised
