"""Ingestion: store messages (idempotent on message ID), extract facts, supersede by structure."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connection, connections, transaction
from django.db.models import Max, QuerySet, Subquery
from django.utils import timezone

from attest.errors import AttestError, NotFound
from attest.metrics import LEDGER_FACTS, LEDGER_INGESTS
from attest.prepared import PreparedQuery
from citations.extract.extractor import (
    EXTRACTOR_VERSION,
    Correction,
    Extraction,
    correction_target,
    read,
)
from citations.models import (
    Fact,
    FactVersion,
    Generation,
    Observation,
    Project,
    Retraction,
    Role,
    Subject,
)
from citations.services.audit import audit_record
from citations.services.corrections import retraction_record
from citations.services.placement import (
    AUTHORED,
    Change,
    LedgerWrite,
    SubjectBatch,
    apply_extraction,
    ingest_generation,
    move_evidence,
)
from citations.services.predicates import predicate_cardinality
from citations.services.rows import execute_together, inserts
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
    hundred messages costs the queries of one, all in the request's transaction. A
    message that corrects an earlier one ("I meant pecans, not peanuts") splits the
    batch: what came before is placed, the correction applied, then the rest.
    """
    result = IngestResult()
    with transaction.atomic():
        # One writer per subject at a time: supersession reads then writes its timeline.
        subject = _locked_subject(project, subject_id)
        if subject.erased_at is not None:
            # An erased subject's tombstone: nothing new is written under its ID.
            raise NotFound("No subject with this ID exists in this project.")
        ctx = _write_start(project, subject)
        stored = _store_observations(ctx, messages)
        result.observations = [
            StoredObservation(observation, subject_id, created) for observation, created in stored
        ]
        readings = [
            (observation, read(message.text, occurred_at=message.occurred_at))
            for (observation, created), message in zip(stored, messages, strict=True)
            if created and observation.role == Role.USER
        ]
        changes: list[tuple[Fact, str, str]] = []
        pending: list[tuple[Observation, Extraction]] = []
        corrected = False
        for observation, reading in readings:
            pending += [(observation, fact) for fact in reading.facts]
            if reading.corrections:
                # What came before the correction is on the timeline before it is read.
                changes += _place(ctx, pending)
                pending = []
                for correction in reading.corrections:
                    changes += _apply_correction(ctx, observation, correction, actor, request_id)
                # What follows is known after the retraction (known time never runs back).
                ctx = LedgerWrite(project, subject, ctx.generation, known_now(project, subject))
                corrected = True
        changes += _place(ctx, pending)
        if corrected:
            # A correction may have retracted a fact this request wrote: read statuses again.
            changes = _statuses_now(changes)
        result.facts = [IngestedFact(fact, change, status) for fact, change, status in changes]
        audit_record(
            project=project,
            operation="observations.ingest",
            actor=actor,
            object_ids=[str(item.observation.pk) for item in result.observations]
            + [str(fact.pk) for fact, _, _ in changes],
            source_count=len(result.observations),
            request_id=request_id,
        )
    LEDGER_INGESTS.inc()
    for item in result.facts:
        LEDGER_FACTS.labels(item.change).inc()
    return result


def _place(
    ctx: LedgerWrite, statements: list[tuple[Observation, Extraction]]
) -> list[tuple[Fact, str, str]]:
    """Place statements together (one batch): each fact touched, how, and its status."""
    if not statements:
        return []
    batch = SubjectBatch(ctx)
    batch.load(statements)
    changes: list[Change] = [
        change
        for observation, extraction in statements
        for change in batch.apply(observation, extraction)
    ]
    batch.flush()
    return [(fact, change, batch.status(fact)) for fact, change in changes]


def _apply_correction(
    ctx: LedgerWrite, observation: Observation, correction: Correction, actor: str, request_id: str
) -> list[tuple[Fact, str, str]]:
    """Retract the mistaken fact and put the message's value in its place.

    "I meant pecans, not peanuts" withdraws ``allergic_to peanuts`` (the retraction
    service, which records who, when and why) and writes ``allergic_to pecans``.

    The mistaken fact is the subject's believed fact that ``correction_target`` picks; the
    replacement keeps its predicate and, unless the message dates it, its start, and its
    evidence is the correcting message's clause. With nothing to correct, a correction
    that names its predicate is an ordinary statement and any other says nothing.
    """
    believed = list(
        FactVersion.objects.filter(
            subject=ctx.subject,
            known_until__isnull=True,
            retraction__isnull=True,
            valid_until__isnull=True,
            fact__erased_at__isnull=True,
        )
        .select_related("fact")
        .order_by("fact__created_at", "known_from", "valid_from", "pk")
    )
    target = correction_target(correction, [(v.predicate, v.fact.value_key) for v in believed])
    if target is None and not correction.predicate:
        return []
    mistaken = believed[target] if target is not None else None
    predicate = mistaken.predicate if mistaken is not None else correction.predicate
    start, precision = correction.valid_from, correction.valid_precision
    if mistaken is not None and not correction.dated:
        start, precision = mistaken.valid_from, mistaken.valid_precision
    retraction = None
    if mistaken is not None:
        retraction = retraction_record(
            project=ctx.project,
            fact_id=mistaken.fact_id,
            reason=f"corrected by message {observation.message_id}",
            actor=actor,
            request_id=request_id,
        )
    placing = LedgerWrite(
        ctx.project, ctx.subject, ctx.generation, known_now(ctx.project, ctx.subject)
    )
    extraction = Extraction(
        predicate=predicate,
        cardinality=predicate_cardinality(project=ctx.project, name=predicate),
        value=correction.value,
        value_key=correction.value_key,
        statement=correction.statement,
        quote=correction.quote,
        byte_start=correction.byte_start,
        byte_end=correction.byte_end,
        valid_from=start,
        valid_precision=precision,
    )
    changes = apply_extraction(placing, observation, extraction)
    placed = [fact for fact, change in changes if change in ("created", "evidence_added")]
    if retraction is not None and placed:
        Retraction.objects.filter(pk=retraction.pk).update(replacement=placed[0])
    return [(fact, change, "") for fact, change in changes]  # statuses read at the end


def _statuses_now(changes: list[tuple[Fact, str, str]]) -> list[tuple[Fact, str, str]]:
    """Each fact's status as its latest version says, one query for all."""
    latest: dict[object, str] = {}
    for fact_id, status in (
        FactVersion.objects.filter(fact__in=[fact for fact, _, _ in changes])
        .order_by("fact_id", "seq")
        .values_list("fact_id", "status")
    ):
        latest[fact_id] = status
    return [(fact, change, latest[fact.pk]) for fact, change, _ in changes]


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


def _generation_and_known(_shape: None, *, project: int, subject: int) -> QuerySet[Generation]:
    """The ingest generation of the current rules, with the subject's latest known times."""
    bounds = (
        FactVersion.objects.filter(project_id=project, subject_id=subject)
        .order_by()
        .values("subject_id")
    )
    return Generation.objects.filter(
        project_id=project, kind=Generation.Kind.INGEST, extractor_version=EXTRACTOR_VERSION
    ).annotate(
        opened=Subquery(bounds.annotate(latest=Max("known_from")).values("latest")),
        closed=Subquery(bounds.annotate(latest=Max("known_until")).values("latest")),
    )


# Read once per ingest, after the subject lock: compiled once (see attest.prepared).
_GENERATION_AND_KNOWN = PreparedQuery(_generation_and_known, project=int, subject=int)


def _write_start(project: Project, subject: Subject) -> LedgerWrite:
    """Where an ingest writes (its generation) and when (``known_now``), in one query.

    Read under the subject lock, like ``known_now``: the generation row of an extractor
    version never changes once written, so a read that the lock's wait made stale is
    still right about it. A project's first ingest creates it the usual way.
    """
    found = _GENERATION_AND_KNOWN.rows(None, project=project.pk, subject=subject.pk)
    if not found:
        generation = ingest_generation(project)
        return LedgerWrite(project, subject, generation, known_now(project, subject))
    generation = found[0]
    # The two annotations of _generation_and_known.
    bounds = (getattr(generation, "opened"), getattr(generation, "closed"))  # noqa: B009
    moments = [moment for moment in bounds if moment]
    return LedgerWrite(project, subject, generation, max([timezone.now(), *moments]))


# --- storing messages --------------------------------------------------------


def _store_observations(
    ctx: LedgerWrite, messages: Sequence[MessageIn]
) -> list[tuple[Observation, bool]]:
    """Each message and whether it was stored now: one insert for all, no lookup first.

    The insert skips a message ID the project holds already (``ON CONFLICT DO NOTHING``
    on the unique ``(project, message_id)``); only those are then read, to apply the
    replay rule. Another request storing one of these IDs at the same time (under
    another subject: the subject lock serialises the same one) is waited for by the
    insert, and then read like any stored message.
    """
    stored: list[tuple[Observation, bool]] = []
    new: dict[str, Observation] = {}
    for index, message in enumerate(messages):
        earlier = new.get(message.message_id)
        if earlier is not None:  # the same ID twice in one request: the second is a replay
            stored.append((earlier, False))
            continue
        content = message.text.encode("utf-8")
        observation = _new_observation(ctx, message, index, content)
        new[message.message_id] = observation
        stored.append((observation, True))
    written = _insert_new(list(new.values()))
    skipped = {
        message_id for message_id, observation in new.items() if observation.pk not in written
    }
    if not skipped and len(stored) == len(new):
        return stored
    known = {
        observation.message_id: observation
        for observation in Observation.objects.for_project(ctx.project).filter(
            message_id__in=skipped
        )
    }
    result = []
    for (observation, created), message in zip(stored, messages, strict=True):
        if created and message.message_id not in skipped:
            result.append((observation, True))
            continue
        existing = known.get(message.message_id, observation)
        _check_replay(existing, ctx.subject, message, _sha256(message.text.encode("utf-8")))
        result.append((existing, False))
    return result


def _insert_new(observations: list[Observation]) -> set[Any]:
    """Insert the rows whose message ID is new to the project; the primary keys written."""
    quote = connection.ops.quote_name
    conflict = (
        f" ON CONFLICT ({quote('project_id')}, {quote('message_id')}) DO NOTHING"
        f" RETURNING {quote('id')}"
    )
    returned = execute_together(inserts(observations, suffix=conflict))
    pk = Observation._meta.pk
    assert pk is not None
    db = connections[DEFAULT_DB_ALIAS]
    prepared = {pk.get_db_prep_save(o.pk, db): o for o in observations}
    written = {prepared[value].pk for rows in returned for (value,) in rows}
    for observation in observations:
        if observation.pk not in written:
            observation._state.adding = True  # not stored: the project's row is read instead
    return written


def _sha256(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


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
    ctx: LedgerWrite, message: MessageIn, index: int, content: bytes
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
        content_sha256=_sha256(content),
        session=message.session,
        ordinal=index if message.ordinal is None else message.ordinal,
    )
