"""Ingestion: store messages (idempotent on message ID), extract facts, supersede by structure."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from django.db import IntegrityError, transaction

from attest.errors import AttestError, NotFound
from citations.extract.extractor import EXTRACTOR_VERSION, Extraction, extract
from citations.extract.intervals import Interval
from citations.models import (
    Evidence,
    Fact,
    FactVersion,
    Generation,
    Observation,
    Project,
    Role,
    Subject,
)
from citations.services.audit import audit_record
from citations.services.placement import (
    AUTHORED,
    Change,
    LedgerWrite,
    apply_extraction,
    evidence_row,
    fact_from,
    move_evidence,
    restate,
)
from citations.services.timeline import known_now, unsaved_first_version

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
    """Store messages (idempotent on message ID), extract facts, supersede by structure."""
    result = IngestResult()
    changes: list[Change] = []
    with transaction.atomic():
        subject, _ = Subject.objects.for_project(project).get_or_create(
            project=project, external_id=subject_id, defaults={}
        )
        # One writer per subject at a time: supersession reads then writes its timeline.
        Subject.objects.select_for_update().filter(pk=subject.pk).first()
        subject.refresh_from_db(fields=["erased_at"])
        if subject.erased_at is not None:
            # An erased subject's tombstone: nothing new is written under its ID.
            raise NotFound("No subject with this ID exists in this project.")
        ctx = LedgerWrite(project, subject, ingest_generation(project), known_now(project, subject))
        for index, message in enumerate(messages):
            observation, created = _store_observation(ctx, message, index)
            result.observations.append(StoredObservation(observation, subject_id, created))
            if not created or observation.role != Role.USER:
                continue
            extractions = extract(message.text, occurred_at=message.occurred_at)
            changes.extend(_apply_message(ctx, observation, extractions))
        statuses = {
            version.fact_id: version.status
            for version in FactVersion.objects.for_project(project).filter(
                fact__in=[fact for fact, _ in changes], known_until__isnull=True
            )
        }
        result.facts = [IngestedFact(fact, change, statuses[fact.pk]) for fact, change in changes]
        audit_record(
            project=project,
            operation="observations.ingest",
            actor=actor,
            object_ids=[str(item.observation.pk) for item in result.observations]
            + [str(fact.pk) for fact, _ in changes],
            source_count=len(result.observations),
            request_id=request_id,
        )
    return result


def ingest_generation(project: Project) -> Generation:
    generation, _ = Generation.objects.for_project(project).get_or_create(
        project=project,
        kind=Generation.Kind.INGEST,
        extractor_version=EXTRACTOR_VERSION,
    )
    return generation


# --- storing messages --------------------------------------------------------


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
            return _create_observation(ctx, message, index, content, digest), True
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


def _create_observation(
    ctx: LedgerWrite, message: MessageIn, index: int, content: bytes, digest: str
) -> Observation:
    return Observation.objects.create(
        project=ctx.project,
        subject=ctx.subject,
        message_id=message.message_id,
        role=message.role,
        occurred_at=message.occurred_at,
        received_at=ctx.now,
        content=content,
        content_sha256=digest,
        session=message.session,
        ordinal=index if message.ordinal is None else message.ordinal,
    )


def _apply_message(
    ctx: LedgerWrite, observation: Observation, extractions: list[Extraction]
) -> list[Change]:
    """Every statement of one message, the values among many stored in a few queries.

    A message may list thousands of likes; one query finds which are already believed
    and the new ones are written together. Values among many never close or split one
    another, nor a functional fact, so writing them after the message's functional
    statements changes nothing but the number of queries.
    """
    many = [e for e in extractions if e.cardinality != "one"]
    believed = _open_many_valued(ctx, many)
    pending = _PendingFacts(ctx, observation)
    changes: list[Change] = []
    for extraction in extractions:
        if extraction.cardinality == "one":
            changes.extend(apply_extraction(ctx, observation, extraction))
            continue
        key = (extraction.predicate, extraction.value_key)
        if key in believed:
            changes.extend(restate(ctx, believed[key], observation, extraction))
        elif key in pending.facts:
            changes.append((pending.add_evidence(key, extraction), "evidence_added"))
        else:
            changes.append((pending.add_fact(key, extraction), "created"))
    pending.save()
    return changes


def _open_many_valued(ctx: LedgerWrite, many: list[Extraction]) -> dict[tuple, Fact]:
    """The believed, open facts of these values, by (predicate, value key)."""
    if not many:
        return {}
    versions = (
        FactVersion.objects.for_project(ctx.project)
        .filter(
            subject=ctx.subject,
            known_until__isnull=True,
            valid_until__isnull=True,
            predicate__in={e.predicate for e in many},
            fact__value_key__in={e.value_key for e in many},
        )
        .select_related("fact")
    )
    return {(v.predicate, v.fact.value_key): v.fact for v in versions}


class _PendingFacts:
    """New facts of values among many, with first versions and evidence, saved at once."""

    def __init__(self, ctx: LedgerWrite, observation: Observation) -> None:
        self.ctx, self.observation = ctx, observation
        self.facts: dict[tuple, Fact] = {}
        self.versions: list[FactVersion] = []
        self.evidence: list[Evidence] = []

    def add_fact(self, key: tuple, extraction: Extraction) -> Fact:
        fact = fact_from(self.ctx, self.observation, extraction)
        self.facts[key] = fact
        self.versions.append(
            unsaved_first_version(
                fact=fact,
                now=self.ctx.now,
                valid=Interval(extraction.valid_from),
                precision=extraction.valid_precision,
            )
        )
        self.add_evidence(key, extraction)
        return fact

    def add_evidence(self, key: tuple, extraction: Extraction) -> Fact:
        fact = self.facts[key]
        self.evidence.append(evidence_row(self.ctx, fact, self.observation, extraction))
        return fact

    def save(self) -> None:
        Fact.objects.bulk_create(self.facts.values(), batch_size=500)
        FactVersion.objects.bulk_create(self.versions, batch_size=500)
        Evidence.objects.bulk_create(self.evidence, batch_size=500)
