"""Erasure of a message or a whole subject: the content goes, content-free tombstones stay.

What goes: the message bytes (and their hash, which would confirm a guess), the session
label, the evidence rows that quoted them, and the statement and value of every fact
left without evidence; a retraction's free-text reason goes with its fact. What stays:
IDs, roles, times and counts, so history keeps its shape and every route can answer the
erased IDs exactly as it answers unknown ones (404). A tombstone also keeps a re-sent
message ID or a new message for an erased subject from bringing the content back.

Facts that keep other evidence stay, with their statement and value read again from a
remaining source; a fact whose end was learned only from an erased message is believed
open again (a new version, known from now), and supersession links that named an erased
message name a remaining source of the successor instead.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from datetime import datetime

from django.db import connection, transaction
from django.db.models import QuerySet

from attest.errors import NotFound
from citations.extract.extractor import statements
from citations.models import (
    Evidence,
    Fact,
    FactVersion,
    Observation,
    Project,
    Retraction,
    Subject,
)
from citations.services.audit import audit_record
from citations.services.search_index import search_index_purge
from citations.services.tenancy import subject_get_live
from citations.services.timeline import known_now, revise

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Erased:
    observations: int
    facts: int


def erasure_perform(
    *,
    project: Project,
    subject_id: str,
    message_id: str | None = None,
    actor: str,
    request_id: str = "",
) -> Erased:
    """Erase one message of a subject, or the whole subject; audited with IDs and counts."""
    with transaction.atomic():
        subject = subject_get_live(project=project, subject_id=subject_id)
        # The subject lock orders erasure against ingestion, rebuilds and other erasures.
        Subject.objects.select_for_update().filter(pk=subject.pk).first()
        subject.refresh_from_db(fields=["erased_at"])
        if subject.erased_at is not None:
            raise NotFound("No subject with this ID exists in this project.")
        now = known_now(project, subject)
        if message_id is None:
            erased = _erase_subject(project, subject, now)
            operation, object_ids = "erasure.subject", [str(subject.pk)]
        else:
            observation = (
                Observation.objects.for_project(project)
                .filter(subject=subject, message_id=message_id, erased_at__isnull=True)
                .first()
            )
            if observation is None:
                raise NotFound("No message with this ID exists for this subject.")
            erased, fact_ids = _erase_message(project, subject, observation, now)
            operation, object_ids = "erasure.message", [str(observation.pk), *fact_ids]
        # The erased facts' search rows went with them (the triggers); now their text
        # leaves the index's own storage too.
        search_index_purge()
        audit_record(
            project=project,
            operation=operation,
            actor=actor,
            object_ids=object_ids,
            source_count=erased.observations,
            request_id=request_id,
        )
        transaction.on_commit(_checkpoint_sqlite)
    return erased


def _checkpoint_sqlite() -> None:
    """SQLite, once an erasure commits: copy the WAL into the database file and empty it.

    ``secure_delete`` (settings) zeroes the erased text in the pages the erasure wrote, but
    those pages sit in the WAL, and until a checkpoint the database file keeps their older
    images and the WAL its older frames, both holding the text. A checkpoint that other
    connections keep from finishing (its busy wait is the connection's timeout) leaves the
    text until the next one: that is logged, never silent.
    """
    if connection.vendor != "sqlite":
        return
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        busy, _, _ = cursor.fetchone()
    if busy:
        logger.warning(
            "the WAL checkpoint after an erasure could not finish: erased text stays in "
            "the SQLite files until a later checkpoint"
        )


def _erase_facts(project: Project, facts: QuerySet[Fact], now: datetime) -> int:
    """Close belief in ``facts`` and drop their content; their versions keep only times."""
    FactVersion.objects.for_project(project).filter(
        fact__in=facts, known_until__isnull=True
    ).update(known_until=now, status="knowledge_closed")
    Retraction.objects.for_project(project).filter(fact__in=facts).update(reason="")
    return facts.update(statement="", value="", value_key="", erased_at=now)


def _erase_subject(project: Project, subject: Subject, now: datetime) -> Erased:
    observations = Observation.objects.for_project(project).filter(
        subject=subject, erased_at__isnull=True
    )
    Evidence.objects.for_project(project).filter(fact__subject=subject).delete()
    facts = _erase_facts(
        project,
        Fact.objects.for_project(project).filter(subject=subject, erased_at__isnull=True),
        now,
    )
    count = observations.update(content=b"", content_sha256="", session="", erased_at=now)
    Subject.objects.filter(pk=subject.pk).update(erased_at=now)
    return Erased(observations=count, facts=facts)


def _erase_message(
    project: Project, subject: Subject, observation: Observation, now: datetime
) -> tuple[Erased, list[str]]:
    evidence = Evidence.objects.for_project(project).filter(observation=observation)
    touched = set(evidence.values_list("fact_id", flat=True))
    evidence.delete()
    remaining = set(
        Evidence.objects.for_project(project)
        .filter(fact_id__in=touched, known_until__isnull=True)
        .values_list("fact_id", flat=True)
    )
    orphaned = touched - remaining
    erased_facts = _erase_facts(
        project, Fact.objects.for_project(project).filter(pk__in=orphaned), now
    )
    for fact in Fact.objects.for_project(project).filter(pk__in=remaining):
        _restate_from_remaining_source(fact)
    _repair_links(project, subject, observation, orphaned, now)
    Observation.objects.filter(pk=observation.pk).update(
        content=b"", content_sha256="", session="", erased_at=now
    )
    fact_ids = sorted(str(pk) for pk in orphaned)
    return Erased(observations=1, facts=erased_facts), fact_ids


def _sources(fact_id: uuid.UUID) -> list[Evidence]:
    return list(
        Evidence.objects.filter(
            fact_id=fact_id, known_until__isnull=True, observation__erased_at__isnull=True
        )
        .select_related("observation")
        .order_by("observation__occurred_at", "observation__message_id", "id")
    )


def _restate_from_remaining_source(fact: Fact) -> None:
    """The statement may have been the erased message's words: take a remaining source's."""
    first = _sources(fact.pk)[0]
    content = bytes(first.observation.content)
    statement = content[first.byte_start : first.byte_end].decode("utf-8")
    value = fact.value
    text = content.decode("utf-8")
    read = statements(text, occurred_at=first.observation.sent_at)
    statement, value = read.get((first.byte_start, first.byte_end), (statement, value))
    Fact.objects.filter(pk=fact.pk).update(statement=statement, value=value)


def _repair_links(
    project: Project,
    subject: Subject,
    observation: Observation,
    erased: set[uuid.UUID],
    now: datetime,
) -> None:
    """Believed versions must not rest on what was erased.

    A fact closed by an erased fact takes over the erased one's end (open again if it
    had none); a closing message that was erased is replaced by the successor's first
    remaining source.
    """
    believed = FactVersion.objects.for_project(project).filter(
        subject=subject, known_until__isnull=True
    )
    for version in believed.filter(superseded_by__in=erased).select_related("fact"):
        successor = version.superseded_by_id
        end = None
        # Follow the chain through erased facts to the first that remains, if any.
        while successor in erased:
            last = FactVersion.objects.filter(fact_id=successor).order_by("-seq").first()
            assert last is not None  # a fact is written with its first version
            end = last
            successor = last.superseded_by_id
        if successor is None:
            revise(
                version,
                now=now,
                valid_until=None,
                valid_until_inclusive=False,
                superseded_by=None,
                supersession_source_observation=None,
            )
        else:
            # The loop ran at least once: version.superseded_by is one of the erased.
            assert end is not None
            revise(
                version,
                now=now,
                valid_until=end.valid_until,
                valid_until_inclusive=end.valid_until_inclusive,
                superseded_by=Fact.objects.get(pk=successor),
                supersession_source_observation=_sources(successor)[0].observation,
            )
    for version in believed.filter(supersession_source_observation=observation).exclude(
        superseded_by__in=erased
    ):
        # A check constraint sets the closing message only with the closing fact.
        assert version.superseded_by_id is not None
        remaining = _sources(version.superseded_by_id)
        revise(
            version,
            now=now,
            supersession_source_observation=remaining[0].observation if remaining else None,
            **({} if remaining else {"superseded_by": None}),
        )
