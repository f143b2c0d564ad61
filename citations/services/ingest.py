"""Ingestion: store messages (idempotent on message ID), extract facts, supersede by structure."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import IntegrityError, transaction
from django.db.models import QuerySet

from attest.errors import AttestError, NotFound
from attest.metrics import LEDGER_FACTS, LEDGER_INGESTS
from attest.prepared import PreparedQuery
from citations.extract.extractor import EXTRACTOR_VERSION, extract
from citations.models import (
    Fact,
    Generation,
    Observation,
    Project,
    Role,
    Subject,
)
from citations.services.audit import audit_record
from citations.services.placement import (
    AUTHORED,
    LedgerWrite,
    SubjectBatch,
    apply_extraction,
    move_evidence,
)
from citations.services.timeline import known_now

# Names that lived here before placement.py was split off stay importable from here.
__all__ = [
    "AUTHORED",
    "IngestResult",
    "IngestedFact",
    "LedgerWrite",
    "MessageConflict",
    "MessageIn",
    "StoredObservation",
    "apply_extraction",
    "ingest_generation",
    "move_evidence",
    "observations_ingest",
]


class MessageConflict(AttestError):
    status_code = 409
    code = "message_conflict"
    message = (
        "A message with this ID was already stored with other text, role, time or subject; "
        "give a different message its own ID."
    )


@dataclass(frozen=True)
class MessageIn:
    message_id: str
    role: str
    text: str
    occurred_at: datetime
    session: str = ""
    ordinal: int | None = None


@dataclass(frozen=True)
class StoredObservation:
    """A message of the request: stored now (``created``) or found stored before."""

    observation: Observation
    subject: str
    created: bool


@dataclass(frozen=True)
class IngestedFact:
    """A fact the request touched, how (``change``) and its status once all was applied."""

    fact: Fact
    change: str  # "created", "evidence_added" or "validity_closed"
    status: str


@dataclass
class IngestResult:
    observations: list[StoredObservation] = field(default_factory=list)
    facts: list[IngestedFact] = field(default_factory=list)


def observations_ingest(
    *,
    project: Project,
    subject_id: str,
    messages: Sequence[MessageIn],
    actor: str,
    request_id: str = "",
) -> IngestResult:
    """Store messages (idempotent on message ID), extract facts, supersede by structure.

    The request's statements are placed together (``SubjectBatch``): a request of a
    hundred messages costs the queries of one, all in the request's transaction.
    """
    result = IngestResult()
    with transaction.atomic():
        # One writer per subject at a time: supersession reads then writes its timeline.
        subject = _locked_subject(project, subject_id)
        if subject.erased_at is not None:
            # An erased subject's tombstone: nothing new is written under its ID.
            raise NotFound("No subject with this ID exists in this project.")
        ctx = LedgerWrite(project, subject, ingest_generation(project), known_now(project, subject))
        stored = _store_observations(ctx, messages)
        result.observations = [
            StoredObservation(observation, subject_id, created) for observation, created in stored
        ]
        statements = [
            (observation, extraction)
            for (observation, created), message in zip(stored, messages, strict=True)
            if created and observation.role == Role.USER
            for extraction in extract(message.text, occurred_at=message.occurred_at)
        ]
        batch = SubjectBatch(ctx)
        batch.load(statements)
        changes = [
            change
            for observation, extraction in statements
            for change in batch.apply(observation, extraction)
        ]
        batch.flush()
        result.facts = [IngestedFact(fact, change, batch.status(fact)) for fact, change in changes]
        audit_record(
            project=project,
            operation="observations.ingest",
            actor=actor,
            object_ids=[str(item.observation.pk) for item in result.observations]
            + [str(fact.pk) for fact, _ in changes],
            source_count=len(result.observations),
            request_id=request_id,
        )
    LEDGER_INGESTS.inc()
    for item in result.facts:
        LEDGER_FACTS.labels(item.change).inc()
    return result


def _subject_to_lock(_shape: None, *, project: int, subject: str) -> QuerySet[Subject]:
    """``first()``'s query for the subject of that ID, with its row lock."""
    return (
        Subject.objects.filter(project_id=project)
        .select_for_update()
        .filter(external_id=subject)
        .order_by("pk")[:1]
    )


# Every ingest locks its subject first: compiled once (see attest.prepared).
_SUBJECT_TO_LOCK = PreparedQuery(_subject_to_lock, project=int, subject=str)


def _locked_subject(project: Project, subject_id: str) -> Subject:
    """The subject of that ID, created if new, locked until the transaction ends."""
    subjects = Subject.objects.for_project(project).select_for_update()
    found = _SUBJECT_TO_LOCK.rows(None, project=project.pk, subject=subject_id)
    subject = found[0] if found else None
    if subject is None:
        created, _ = Subject.objects.for_project(project).get_or_create(
            project=project, external_id=subject_id, defaults={}
        )
        subject = subjects.get(pk=created.pk)
    return subject


def ingest_generation(project: Project) -> Generation:
    generation, _ = Generation.objects.for_project(project).get_or_create(
        project=project,
        kind=Generation.Kind.INGEST,
        extractor_version=EXTRACTOR_VERSION,
    )
    return generation


# --- storing messages --------------------------------------------------------


def _store_observations(
    ctx: LedgerWrite, messages: Sequence[MessageIn]
) -> list[tuple[Observation, bool]]:
    """Each message and whether it was stored now: one lookup and one insert for all."""
    known = {
        observation.message_id: observation
        for observation in Observation.objects.for_project(ctx.project).filter(
            message_id__in={message.message_id for message in messages}
        )
    }
    stored, new = [], []
    for index, message in enumerate(messages):
        content = message.text.encode("utf-8")
        digest = hashlib.sha256(content).hexdigest()
        existing = known.get(message.message_id)
        if existing is not None:
            _check_replay(existing, ctx.subject, message, digest)
            stored.append((existing, False))
            continue
        observation = _new_observation(ctx, message, index, content, digest)
        known[message.message_id] = observation
        new.append(observation)
        stored.append((observation, True))
    try:
        with transaction.atomic():
            Observation.objects.bulk_create(new, batch_size=500)
    except IntegrityError:
        # Another request stored one of these IDs first (under another subject, since
        # the subject lock serialises the same one): one by one, the replay rule applies.
        return [_store_observation(ctx, message, index) for index, message in enumerate(messages)]
    return stored


def _store_observation(
    ctx: LedgerWrite, message: MessageIn, index: int
) -> tuple[Observation, bool]:
    content = message.text.encode("utf-8")
    digest = hashlib.sha256(content).hexdigest()
    stored = Observation.objects.for_project(ctx.project).filter(message_id=message.message_id)
    existing = stored.first()
    if existing is not None:
        _check_replay(existing, ctx.subject, message, digest)
        return existing, False
    try:
        with transaction.atomic():
            observation = _new_observation(ctx, message, index, content, digest)
            observation.save(force_insert=True)
            return observation, True
    except IntegrityError:
        # Another request stored this message ID first (under another subject, since
        # the subject lock serialises the same one): the same rule as a replay applies.
        existing = Observation.objects.for_project(ctx.project).get(message_id=message.message_id)
        _check_replay(existing, ctx.subject, message, digest)
        return existing, False


def _check_replay(existing: Observation, subject: Subject, message: MessageIn, digest: str) -> None:
    """A re-sent message ID must be the same message, or the client has two messages.

    Role and time count as much as the text: the same words sent by the assistant, or
    on another day, would have given other facts than the ones stored.
    """
    if existing.erased_at is not None:
        # An erased message ID answers 404 and its text is never stored again.
        raise NotFound("No message with this ID exists in this project.")
    if (
        existing.content_sha256 != digest
        or existing.subject_id != subject.pk
        or existing.role != message.role
        or existing.occurred_at != message.occurred_at
    ):
        raise MessageConflict(details={"message_id": message.message_id})


def _offset(moment: datetime) -> timedelta:
    """The UTC offset a message was written at (the API takes no time without one)."""
    offset = moment.utcoffset()
    if offset is None:
        raise ValueError(f"{moment.isoformat()} names no UTC offset")
    return offset


def _new_observation(
    ctx: LedgerWrite, message: MessageIn, index: int, content: bytes, digest: str
) -> Observation:
    return Observation(
        project=ctx.project,
        subject=ctx.subject,
        message_id=message.message_id,
        role=message.role,
        occurred_at=message.occurred_at,
        occurred_offset=int(_offset(message.occurred_at).total_seconds()),
        received_at=ctx.now,
        content=content,
        content_sha256=digest,
        session=message.session,
        ordinal=index if message.ordinal is None else message.ordinal,
    )
