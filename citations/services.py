"""Writes to the fact ledger: projects, credentials, ingestion with supersession, and audit."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime

from django.db import IntegrityError, connection, transaction
from django.db.models import F, Max
from django.utils import timezone

from attest.errors import AttestError, NotFound
from citations.auth import new_token
from citations.extract.extractor import EXTRACTOR_VERSION, Extraction, extract
from citations.extract.intervals import Interval, derive_status
from citations.models import (
    AuditEvent,
    Credential,
    Evidence,
    Fact,
    FactVersion,
    Generation,
    Observation,
    Project,
    Role,
    Subject,
)
from citations.selectors import recall_facts, resolve_fact

GENESIS_HASH = "0" * 64


class MessageConflict(AttestError):
    status_code = 409
    code = "message_conflict"
    message = (
        "A message with this ID was already stored with other text, role, time or subject; "
        "give a different message its own ID."
    )


# --- tenancy ---------------------------------------------------------------


@transaction.atomic
def project_create(*, name: str) -> tuple[Project, str]:
    """A new project and its first credential; the token is returned once, never stored."""
    project = Project.objects.create(name=name)
    _, token = credential_create(project=project, label="initial")
    return project, token


def credential_create(*, project: Project, label: str = "") -> tuple[Credential, str]:
    token, prefix, digest = new_token()
    credential = Credential.objects.create(
        project=project, prefix=prefix, secret_sha256=digest, label=label
    )
    return credential, token


@transaction.atomic
def credential_revoke(*, credential: Credential, actor: str) -> None:
    revoked = Credential.objects.filter(pk=credential.pk, revoked_at__isnull=True).update(
        revoked_at=timezone.now()
    )
    if revoked:
        audit_record(
            project=credential.project,
            operation="credential.revoke",
            actor=actor,
            object_ids=[credential.prefix],
        )


@transaction.atomic
def project_set_suspended(*, project: Project, suspended: bool, actor: str) -> None:
    """Suspend a project (its credentials answer 403) or reinstate it; audited."""
    rows = Project.objects.filter(pk=project.pk, suspended_at__isnull=suspended)
    if rows.update(suspended_at=timezone.now() if suspended else None):
        audit_record(
            project=project,
            operation="project.suspend" if suspended else "project.reinstate",
            actor=actor,
            object_ids=[str(project.pk)],
        )


# --- audit -----------------------------------------------------------------


def audit_record(
    *,
    project: Project,
    operation: str,
    actor: str,
    object_ids: Sequence[str],
    source_count: int = 0,
    request_id: str = "",
) -> AuditEvent:
    """Append one event to the project's hash chain (IDs and counts only, never content)."""
    with transaction.atomic():
        # The project row is the chain's lock: concurrent writers take turns for ``seq``.
        Project.objects.select_for_update().filter(pk=project.pk).first()
        last = AuditEvent.objects.for_project(project).order_by("-seq").first()
        seq = last.seq + 1 if last else 1
        prev_hash = last.hash if last else GENESIS_HASH
        created_at = timezone.now()
        ids = [str(value) for value in object_ids]
        body = {
            "project": project.pk,
            "seq": seq,
            "operation": operation,
            "actor": actor,
            "object_ids": ids,
            "source_count": source_count,
            "request_id": request_id,
            "created_at": created_at.isoformat(),
        }
        canonical = json.dumps(body, sort_keys=True, separators=(",", ":"))
        digest = hashlib.sha256((prev_hash + canonical).encode()).hexdigest()
        return AuditEvent.objects.create(
            project=project,
            seq=seq,
            operation=operation,
            actor=actor,
            object_ids=ids,
            source_count=source_count,
            request_id=request_id,
            created_at=created_at,
            prev_hash=prev_hash,
            hash=digest,
        )


def audit_chain_intact(*, project: Project) -> bool:
    """Recompute the project's chain; False if any row was removed, reordered or altered."""
    prev_hash = GENESIS_HASH
    for expected_seq, event in enumerate(
        AuditEvent.objects.for_project(project).order_by("seq").iterator(), start=1
    ):
        body = {
            "project": project.pk,
            "seq": event.seq,
            "operation": event.operation,
            "actor": event.actor,
            "object_ids": event.object_ids,
            "source_count": event.source_count,
            "request_id": event.request_id,
            "created_at": event.created_at.isoformat(),
        }
        canonical = json.dumps(body, sort_keys=True, separators=(",", ":"))
        digest = hashlib.sha256((prev_hash + canonical).encode()).hexdigest()
        if event.seq != expected_seq or event.prev_hash != prev_hash or event.hash != digest:
            return False
        prev_hash = event.hash
    return True


# --- ingestion -------------------------------------------------------------


@dataclass(frozen=True)
class MessageIn:
    message_id: str
    role: str
    text: str
    occurred_at: datetime
    session: str = ""
    ordinal: int | None = None


@dataclass
class IngestResult:
    observations: list[tuple[Observation, bool]] = field(default_factory=list)
    # (fact, change) where change is "created", "evidence_added" or "validity_closed".
    facts: list[tuple[Fact, str]] = field(default_factory=list)
    # The status of each of those facts once the whole request was applied.
    statuses: dict[str, str] = field(default_factory=dict)

    def fact_statuses(self) -> list[tuple[Fact, str, str]]:
        return [(fact, change, self.statuses[str(fact.pk)]) for fact, change in self.facts]


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
        now = _known_now(project, subject)
        generation = _ingest_generation(project)
        for index, message in enumerate(messages):
            observation, created = _store_observation(project, subject, message, index, now)
            result.observations.append((observation, created))
            if not created or observation.role != Role.USER:
                continue
            for extraction in extract(message.text, occurred_at=message.occurred_at):
                result.facts.extend(
                    _apply_extraction(project, subject, generation, observation, extraction, now)
                )
        for version in FactVersion.objects.for_project(project).filter(
            fact__in=[fact for fact, _ in result.facts], known_until__isnull=True
        ):
            result.statuses[str(version.fact_id)] = version.status
        audit_record(
            project=project,
            operation="observations.ingest",
            actor=actor,
            object_ids=[str(obs.pk) for obs, _ in result.observations]
            + [str(fact.pk) for fact, _ in result.facts],
            source_count=len(result.observations),
            request_id=request_id,
        )
    return result


def _known_now(project: Project, subject: Subject) -> datetime:
    """The known time of this change, read under the subject lock.

    Known time must never run backwards for a subject, even when another server's
    clock is a little ahead: a change is never known before the one it follows.
    """
    bounds = (
        FactVersion.objects.for_project(project)
        .filter(subject=subject)
        .aggregate(opened=Max("known_from"), closed=Max("known_until"))
    )
    return max([timezone.now(), *(moment for moment in bounds.values() if moment)])


def _ingest_generation(project: Project) -> Generation:
    generation, _ = Generation.objects.for_project(project).get_or_create(
        project=project,
        kind=Generation.Kind.INGEST,
        extractor_version=EXTRACTOR_VERSION,
    )
    return generation


def _store_observation(
    project: Project, subject: Subject, message: MessageIn, index: int, now: datetime
) -> tuple[Observation, bool]:
    content = message.text.encode("utf-8")
    digest = hashlib.sha256(content).hexdigest()
    stored = Observation.objects.for_project(project).filter(message_id=message.message_id)
    existing = stored.first()
    if existing is not None:
        _check_replay(existing, subject, message, digest)
        return existing, False
    try:
        with transaction.atomic():
            return _create_observation(project, subject, message, index, now, content, digest), True
    except IntegrityError:
        # Another request stored this message ID first (under another subject, since
        # the subject lock serialises the same one): the same rule as a replay applies.
        existing = Observation.objects.for_project(project).get(message_id=message.message_id)
        _check_replay(existing, subject, message, digest)
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
    project: Project,
    subject: Subject,
    message: MessageIn,
    index: int,
    now: datetime,
    content: bytes,
    digest: str,
) -> Observation:
    return Observation.objects.create(
        project=project,
        subject=subject,
        message_id=message.message_id,
        role=message.role,
        occurred_at=message.occurred_at,
        received_at=now,
        content=content,
        content_sha256=digest,
        session=message.session,
        ordinal=index if message.ordinal is None else message.ordinal,
    )


def _believed(project: Project, subject: Subject, predicate: str):
    return (
        FactVersion.objects.for_project(project)
        .filter(subject=subject, predicate=predicate, known_until__isnull=True)
        .select_related("fact")
        .order_by("valid_from", "seq")
    )


def _valid(version: FactVersion) -> Interval:
    return Interval(
        version.valid_from,
        version.valid_until,
        version.valid_from_inclusive,
        version.valid_until_inclusive,
    )


def _add_evidence(
    project: Project, fact: Fact, observation: Observation, extraction: Extraction, now: datetime
) -> bool:
    quote = bytes(observation.content)[extraction.byte_start : extraction.byte_end]
    _, created = Evidence.objects.get_or_create(
        fact=fact,
        observation=observation,
        byte_start=extraction.byte_start,
        byte_end=extraction.byte_end,
        defaults={
            "project": project,
            "quote_sha256": hashlib.sha256(quote).hexdigest(),
            "extractor_version": EXTRACTOR_VERSION,
            "asserted_from": extraction.valid_from,
            "asserted_precision": extraction.valid_precision,
            "created_at": now,
        },
    )
    return created


def _sources_in_time_order(fact: Fact):
    return (
        Evidence.objects.for_project(fact.project)
        .filter(fact=fact)
        .select_related("observation")
        .order_by(F("asserted_from").asc(nulls_first=True), "observation__occurred_at", "id")
    )


def _first_source(fact: Fact) -> Observation:
    """The message that first stated the fact: it is what supersedes a predecessor."""
    return _sources_in_time_order(fact).first().observation


def _split_off(
    version: FactVersion, sources: list[Evidence], generation: Generation, now: datetime
) -> FactVersion:
    """Give ``sources`` (restating ``version``'s value from a later start) a fact of their own.

    Called while ``version`` is closed at an earlier point by a new value: the value
    held again from the first of these sources until where ``version`` used to end.
    """
    first = sources[0]
    quote = bytes(first.observation.content)[first.byte_start : first.byte_end]
    fact = Fact.objects.create(
        project=version.project,
        subject=version.subject,
        predicate=version.predicate,
        functional=True,
        value=version.fact.value,
        value_key=version.fact.value_key,
        statement=quote.decode("utf-8") + ".",
        source_role=first.observation.role,
        generation=generation,
        created_at=now,
    )
    rest = FactVersion(
        fact=fact,
        seq=1,
        project=version.project,
        subject=version.subject,
        predicate=version.predicate,
        functional=True,
        valid_from=first.asserted_from,
        valid_until=version.valid_until,
        valid_until_inclusive=version.valid_until_inclusive,
        valid_precision=first.asserted_precision or "instant",
        superseded_by=version.superseded_by,
        supersession_source_observation=version.supersession_source_observation,
        known_from=now,
    )
    rest.status = derive_status(
        valid=_valid(rest), known=Interval(now), retracted=False, reinterpreted=False
    )
    rest.save()
    # The sources now support the new fact; the closed one keeps the sources before the cut.
    Evidence.objects.for_project(version.project).filter(pk__in=[e.pk for e in sources]).update(
        fact=fact
    )
    return rest


def _apply_extraction(
    project: Project,
    subject: Subject,
    generation: Generation,
    observation: Observation,
    extraction: Extraction,
    now: datetime,
) -> list[tuple[Fact, str]]:
    start = extraction.valid_from
    functional = extraction.cardinality == "one"
    if not functional:
        # Only the open fact with this value matters: asking the database for it keeps a
        # message listing thousands of likes from reading every earlier one per item.
        version = (
            _believed(project, subject, extraction.predicate)
            .filter(fact__value_key=extraction.value_key, valid_until__isnull=True)
            .first()
        )
        if version is not None:
            _add_evidence(project, version.fact, observation, extraction, now)
            return [(version.fact, "evidence_added")]
        fact = _create_fact(project, subject, generation, observation, extraction, now, None)
        return [(fact, "created")]
    versions = list(_believed(project, subject, extraction.predicate))

    containing = next((v for v in versions if _valid(v).contains(start)), None)
    later = [v for v in versions if v.valid_from > start and v is not containing]
    successor = later[0] if later else None
    if containing is not None and containing.fact.value_key == extraction.value_key:
        # The same claim again, within its validity: more evidence, not a second fact.
        _add_evidence(project, containing.fact, observation, extraction, now)
        return [(containing.fact, "evidence_added")]
    if (
        containing is not None
        and containing.valid_from == start
        and _first_source(containing.fact).occurred_at > observation.occurred_at
    ):
        # Both begin at the same moment and the stored one was said later: it wins.
        successor, containing = containing, None
    restated_later = []
    if containing is not None:
        restated_later = [
            e
            for e in _sources_in_time_order(containing.fact)
            if e.asserted_from is not None and e.asserted_from > start
        ]
    if not restated_later and successor and successor.fact.value_key == extraction.value_key:
        # The next fact already has this value: it began earlier than known (a late
        # message), so it now starts here, closing whatever held before.
        changes = []
        if containing is not None:
            close_validity(
                version=containing, at=start, by_fact=successor.fact, source=observation, now=now
            )
            changes.append((containing.fact, "validity_closed"))
        _revise(successor, now=now, valid_from=start, valid_precision=extraction.valid_precision)
        _add_evidence(project, successor.fact, observation, extraction, now)
        return [(successor.fact, "evidence_added"), *changes]

    changes: list[tuple[Fact, str]] = []
    fact = Fact(
        project=project,
        subject=subject,
        predicate=extraction.predicate,
        functional=True,
        value=extraction.value,
        value_key=extraction.value_key,
        statement=extraction.statement,
        source_role=observation.role,
        generation=generation,
        created_at=now,
    )
    if containing is not None:
        # The new fact starts inside the current one: that one stops being true here.
        fact.save()
        close_validity(version=containing, at=start, by_fact=fact, source=observation, now=now)
        changes.append((containing.fact, "validity_closed"))
        if restated_later:
            # The old value was stated again after the new one began (those messages
            # arrived first): it holds again from then, as a fact of its own.
            successor = _split_off(containing, restated_later, generation, now)
            changes.append((successor.fact, "created"))
    closed_by = None
    if successor is not None:
        # Arrived out of order: a later-starting fact already exists and ends this one.
        closed_by = (successor.fact, successor.valid_from, _first_source(successor.fact))
    _create_fact(project, subject, generation, observation, extraction, now, closed_by, fact)
    changes.insert(0, (fact, "created"))
    return changes


def _create_fact(
    project: Project,
    subject: Subject,
    generation: Generation,
    observation: Observation,
    extraction: Extraction,
    now: datetime,
    closed_by: tuple[Fact, datetime, Observation] | None,
    fact: Fact | None = None,
) -> Fact:
    if fact is None:
        fact = Fact(
            project=project,
            subject=subject,
            predicate=extraction.predicate,
            functional=extraction.cardinality == "one",
            value=extraction.value,
            value_key=extraction.value_key,
            statement=extraction.statement,
            source_role=observation.role,
            generation=generation,
            created_at=now,
        )
    if fact._state.adding:
        fact.save()
    valid = Interval(extraction.valid_from)
    version = FactVersion(
        fact=fact,
        seq=1,
        project=project,
        subject=subject,
        predicate=fact.predicate,
        functional=fact.functional,
        valid_from=valid.start,
        valid_precision=extraction.valid_precision,
        known_from=now,
    )
    if closed_by is not None:
        successor, until, source = closed_by
        version.valid_until = max(until, valid.start)
        version.superseded_by = successor
        version.supersession_source_observation = source
    version.status = derive_status(
        valid=Interval(version.valid_from, version.valid_until),
        known=Interval(now),
        retracted=False,
        reinterpreted=False,
    )
    version.save()
    _add_evidence(project, fact, observation, extraction, now)
    return fact


def close_validity(
    *, version: FactVersion, at: datetime, by_fact: Fact, source: Observation, now: datetime
) -> FactVersion:
    """Record that ``version``'s fact stopped being true at ``at``, superseded by ``by_fact``."""
    valid = _valid(version).closed_at(max(at, version.valid_from))
    return _revise(
        version,
        now=now,
        valid_until=valid.end,
        valid_until_inclusive=valid.end_inclusive,
        superseded_by=by_fact,
        supersession_source_observation=source,
    )


def _revise(version: FactVersion, *, now: datetime, **changes) -> FactVersion:
    """Believe something new about a fact from ``now`` on, keeping what was believed before.

    Known time is append-only: the believed version's known interval closes at ``now``
    and a new version carries the change. The database refuses any other update of a
    stored version (migration 0003), so even a version first believed in this same
    transaction is closed, not corrected: its known interval is then empty.
    """
    version.known_until = now
    version.status = derive_status(
        valid=_valid(version),
        known=Interval(version.known_from, now),
        retracted=False,
        reinterpreted=False,
    )
    version.save(update_fields=["known_until", "status"])
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
    revised.status = derive_status(
        valid=_valid(revised), known=Interval(now), retracted=False, reinterpreted=False
    )
    revised.save()
    return revised


# --- reads that are audited --------------------------------------------------


@contextmanager
def read_snapshot() -> Iterator[None]:
    """One transaction whose reads all see the same committed state.

    On PostgreSQL the default READ COMMITTED lets each statement see a newer
    state, so a fact and its evidence could come from two moments; REPEATABLE
    READ makes a resolve page the consistent snapshot the seed promises. Inside
    an enclosing transaction (tests, or a caller's own) that one decides. SQLite
    transactions are serialised already.
    """
    outermost = not connection.in_atomic_block
    with transaction.atomic():
        if outermost and connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        yield


def citation_resolve(*, project: Project, payload: dict, actor: str, request_id: str = "") -> dict:
    """Resolve a fact ID (see selectors.resolve_fact) and audit how many sources left."""
    with read_snapshot():
        resolved = resolve_fact(project=project, payload=payload)
    with transaction.atomic():
        audit_record(
            project=project,
            operation="citation.resolve",
            actor=actor,
            object_ids=[resolved.fact_id],
            source_count=resolved.source_count,
            request_id=request_id,
        )
    return resolved.body


def facts_recall(
    *,
    project: Project,
    subject_id: str,
    actor: str,
    predicate: str | None = None,
    query: str | None = None,
    valid_at: datetime | None = None,
    known_at: datetime | None = None,
    limit: int = 50,
    request_id: str = "",
) -> list[dict]:
    """Recall facts (see selectors.recall_facts) and audit which IDs were returned."""
    with transaction.atomic():
        facts = recall_facts(
            project=project,
            subject_id=subject_id,
            predicate=predicate,
            query=query,
            valid_at=valid_at,
            known_at=known_at,
            limit=limit,
        )
        audit_record(
            project=project,
            operation="facts.recall",
            actor=actor,
            object_ids=[fact["id"] for fact in facts],
            source_count=len(facts),
            request_id=request_id,
        )
    return facts
