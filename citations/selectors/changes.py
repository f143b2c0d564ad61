"""The change feed and the list of subjects: what an agent reads to keep its copy in step."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Count, Max

from citations.cursor import BadCursor, next_page, position_after
from citations.models import Fact, FactChange, Observation, Project, Subject
from citations.selectors.fact_views import bad_after

CHANGES_DEFAULT_LIMIT = 50
CHANGES_MAX_LIMIT = 200
SUBJECTS_DEFAULT_LIMIT = 50
SUBJECTS_MAX_LIMIT = 200


@dataclass(frozen=True)
class ChangeView:
    """One event of the feed. ``subject`` is None once the subject is erased, ``predicate``
    once the fact is: an erased subject's events then name no one, as an unknown's would."""

    id: int
    type: str
    fact_id: uuid.UUID
    subject: str | None
    predicate: str | None
    at: datetime


@dataclass(frozen=True)
class ChangePage:
    changes: list[ChangeView]
    next: dict[str, str] | None = None


def _change_view(row: FactChange) -> ChangeView:
    subject = row.subject
    fact = row.fact
    return ChangeView(
        id=row.seq,
        type=row.type,
        fact_id=row.fact_id,
        subject=subject.external_id if subject.erased_at is None else None,
        predicate=fact.predicate if fact.erased_at is None else None,
        at=row.at,
    )


def change_feed(
    *,
    project: Project,
    subject_id: str | None = None,
    limit: int = CHANGES_DEFAULT_LIMIT,
    after: Any = None,
) -> ChangePage:
    """The project's changes in commit order (``seq``), optionally one subject's, a page at
    a time: every page with changes has a ``next`` to read on from, now or later. An
    erased subject's own feed is empty, as an unknown subject's is."""
    scope = "changes:" + json.dumps([subject_id])
    try:
        position = position_after(after, scope=scope, shape=(int,))
    except BadCursor:
        raise bad_after() from None
    rows = (
        FactChange.objects.for_project(project)
        .select_related("subject")
        .select_related("fact")
        .only(
            "seq",
            "type",
            "fact_id",
            "at",
            "subject__external_id",
            "subject__erased_at",
            "fact__predicate",
            "fact__erased_at",
        )
        .order_by("seq")
    )
    if subject_id is not None:
        rows = rows.filter(subject__external_id=subject_id, subject__erased_at__isnull=True)
    if position is not None:
        rows = rows.filter(seq__gt=position[0])
    page = [_change_view(row) for row in rows[:limit]]
    # A feed has no last page: any page with changes hands out the cursor after its last
    # one, to read on from now or later; an empty page has none (send the same after).
    if not page:
        return ChangePage(page)
    return ChangePage(page, next_page(scope=scope, position=[page[-1].id]))


@dataclass(frozen=True)
class SubjectView:
    pk: int  # for the audit log, which names rows by ID, never by the client's text
    subject: str
    facts: int
    last_observed_at: datetime | None


@dataclass(frozen=True)
class SubjectPage:
    subjects: list[SubjectView]
    next: dict[str, str] | None = None


def subject_list(
    *, project: Project, limit: int = SUBJECTS_DEFAULT_LIMIT, after: Any = None
) -> SubjectPage:
    """The project's subjects by ID (erased ones left out, as if never seen), each with its
    count of facts not erased and the time of its latest message not erased."""
    scope = "subjects"
    try:
        position = position_after(after, scope=scope, shape=(str,))
    except BadCursor:
        raise bad_after() from None
    subjects = Subject.objects.for_project(project).filter(erased_at__isnull=True)
    if position is not None:
        subjects = subjects.filter(external_id__gt=position[0])
    found = list(subjects.order_by("external_id").values_list("pk", "external_id")[: limit + 1])
    ids = [pk for pk, _ in found[:limit]]
    facts = dict(
        Fact.objects.for_project(project)
        .filter(subject_id__in=ids, erased_at__isnull=True)
        .values("subject_id")
        .annotate(n=Count("pk"))
        .values_list("subject_id", "n")
    )
    observed = dict(
        Observation.objects.for_project(project)
        .filter(subject_id__in=ids, erased_at__isnull=True)
        .values("subject_id")
        .annotate(last=Max("occurred_at"))
        .values_list("subject_id", "last")
    )
    page = [SubjectView(pk, name, facts.get(pk, 0), observed.get(pk)) for pk, name in found[:limit]]
    if len(found) <= limit:
        return SubjectPage(page)
    return SubjectPage(page, next_page(scope=scope, position=[page[-1].subject]))
