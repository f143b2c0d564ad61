"""Authored records: a person states a fact directly; its evidence names who wrote it."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction

from attest.errors import InvalidRequest, NotFound
from citations.extract.extractor import Extraction, value_key
from citations.models import (
    VALUE_KEY_MAX_LENGTH,
    Evidence,
    EvidenceKind,
    Fact,
    FactVersion,
    Observation,
    Project,
    Role,
    Subject,
)
from citations.selectors import ResolvedCitation, resolved_citation
from citations.selectors.web_evidence import CheckedWebQuote, WebQuoteIn, checked_web_quotes
from citations.services.audit import audit_record
from citations.services.placement import (
    LedgerWrite,
    SubjectBatch,
    apply_extraction,
    ingest_generation,
)
from citations.services.predicates import predicate_cardinality
from citations.services.reads import read_snapshot
from citations.services.timeline import known_now, revise
from citations.services.web_evidence import web_evidence_add

# The reasons a piece of message evidence is refused, in ``details.reason``.
QUOTE_NOT_IN_MESSAGE = "quote_not_in_message"
MESSAGE_NOT_FOUND = "message_not_found"
MESSAGE_REASONS = {
    MESSAGE_NOT_FOUND: "no message with this ID is stored for the subject (unknown, erased, "
    "another subject's, or an authored record's own statement)",
    QUOTE_NOT_IN_MESSAGE: "the quote's UTF-8 bytes do not occur in the message's bytes "
    "(or occur fewer than `occurrence` + 1 times)",
}
DEFAULT_EXTRACTED_BY = "client"


@dataclass(frozen=True)
class MessageQuoteIn:
    """One piece of message evidence as the caller sends it."""

    message_id: str
    quote: str
    occurrence: int = 0
    position: int = 0  # its index in the request's ``evidence`` list


@dataclass(frozen=True)
class LocatedQuote:
    """A quote found in a stored message: the bytes the evidence row will point at."""

    observation: Observation
    byte_start: int
    byte_end: int


def _refused(item: MessageQuoteIn, part: str, reason: str, message: str) -> InvalidRequest:
    return InvalidRequest(
        f"evidence[{item.position}]: {message}",
        field=f"evidence[{item.position}].{part}",
        details={"reason": reason},
    )


def _byte_offset(content: bytes, quote: bytes, occurrence: int) -> int:
    """Where the ``occurrence``-th (0-based) copy of ``quote`` starts, or -1."""
    at = content.find(quote)
    for _ in range(occurrence):
        if at < 0:
            break
        at = content.find(quote, at + 1)
    return at


def located_quotes(
    project: Project, subject: Subject, items: Sequence[MessageQuoteIn]
) -> list[LocatedQuote]:
    """Find every quote in its message, byte for byte, before anything is written."""
    ids = {item.message_id for item in items}
    messages = {
        o.message_id: o
        for o in Observation.objects.for_project(project)
        .filter(subject=subject, message_id__in=ids, erased_at__isnull=True)
        # An authored record's own statement is not a message anyone sent.
        .exclude(evidence__kind=EvidenceKind.AUTHORED)
    }
    located = []
    for item in items:
        observation = messages.get(item.message_id)
        if observation is None:
            raise _refused(
                item,
                "message_id",
                MESSAGE_NOT_FOUND,
                "no message with this ID is stored for this subject.",
            )
        quote = item.quote.encode("utf-8")
        start = _byte_offset(bytes(observation.content), quote, item.occurrence)
        if start < 0:
            raise _refused(
                item,
                "quote",
                QUOTE_NOT_IN_MESSAGE,
                _not_found_message(item.occurrence),
            )
        located.append(LocatedQuote(observation, start, start + len(quote)))
    return located


def _not_found_message(occurrence: int) -> str:
    if occurrence == 0:
        return "the message does not hold the quote byte for byte; copy it from the text."
    return (
        f"occurrence {occurrence} asks for copy number {occurrence + 1} of the quote (counting "
        "from 0), and the message holds fewer copies byte for byte; lower occurrence."
    )


@dataclass(frozen=True)
class AuthoredStatement:
    predicate: str  # empty in a correction: the retracted fact's
    statement: str  # empty in a client record with message evidence: the first quote
    value: str = ""  # empty: the statement is the value
    valid_from: datetime | None = None  # None: from now
    valid_until: datetime | None = None  # None: open
    role: str = Role.USER


def locked_subject(project: Project, subject_id: str) -> Subject:
    """The subject (created if new), locked: one writer per subject's timeline at a time."""
    subject, _ = Subject.objects.for_project(project).get_or_create(
        project=project, external_id=subject_id, defaults={}
    )
    locked = Subject.objects.select_for_update().get(pk=subject.pk)
    if locked.erased_at is not None:
        # An erased subject's tombstone: nothing new is written under its ID.
        raise NotFound("No subject with this ID exists in this project.")
    return locked


def write_authored(
    ctx: LedgerWrite, statement: AuthoredStatement, web: Sequence[CheckedWebQuote] = ()
) -> Fact:
    """Store the statement as a message of its own and place it on the subject's timeline.

    Called with the subject locked. Returns the fact it supports: a new fact, or the
    believed fact that already says the same thing (the statement becomes more evidence).
    ``web`` quotes (already checked) join the statement's evidence on that fact.
    """
    content = statement.statement.encode("utf-8")
    start = statement.valid_from or ctx.now
    if statement.valid_until is not None and statement.valid_until <= start:
        raise InvalidRequest("valid_until must come after valid_from.", field="valid_until")
    observation = Observation.objects.create(
        project=ctx.project,
        subject=ctx.subject,
        message_id=f"authored:{uuid.uuid4()}",
        role=statement.role,
        occurred_at=ctx.now,
        received_at=ctx.now,
        content=content,
        content_sha256=hashlib.sha256(content).hexdigest(),
    )
    value = statement.value or statement.statement
    key = value_key(value)
    if len(key) > VALUE_KEY_MAX_LENGTH:
        # A long statement with no value of its own, or a value that grows when case-folded.
        raise InvalidRequest(
            f"value: at most {VALUE_KEY_MAX_LENGTH} characters once case-folded; give a shorter "
            "`value` (by default the statement is the value).",
            field="value",
        )
    extraction = Extraction(
        predicate=statement.predicate,
        cardinality=predicate_cardinality(project=ctx.project, name=statement.predicate),
        value=value,
        value_key=key,
        statement=statement.statement,
        quote=statement.statement,
        byte_start=0,
        byte_end=len(content),
        valid_from=start,
        valid_precision="instant",
    )
    fact = apply_extraction(ctx, observation, extraction)[0][0]
    if web:
        web_evidence_add(
            Evidence.objects.get(fact=fact, observation=observation, known_until__isnull=True),
            web,
        )
    _end_validity(ctx, fact, statement)
    return fact


def _end_validity(ctx: LedgerWrite, fact: Fact, statement: AuthoredStatement) -> None:
    if statement.valid_until is not None:
        version = FactVersion.objects.get(fact=fact, known_until__isnull=True)
        if version.valid_until is None or version.valid_until > statement.valid_until:
            # It ends before any successor began: the gap after it is unknown, not superseded.
            revise(
                version,
                now=ctx.now,
                valid_until=statement.valid_until,
                superseded_by=None,
                supersession_source_observation=None,
            )


def write_client(
    ctx: LedgerWrite,
    statement: AuthoredStatement,
    located: Sequence[LocatedQuote],
    web: Sequence[CheckedWebQuote] = (),
) -> Fact:
    """Place a fact a client extracted from stored messages; its evidence is their bytes.

    Called with the subject locked. Each quote becomes an ordinary message evidence row
    (``extractor_version`` ``client:<name>``) of one fact, placed as the built-in
    extractor's statements are: valid from ``valid_from``, by default when the first
    quoted message was sent. ``web`` quotes hang off the first quote's row.
    """
    first = located[0]
    first_quote = bytes(first.observation.content)[first.byte_start : first.byte_end]
    text = statement.statement or first_quote.decode("utf-8")
    value = statement.value or text
    key = value_key(value)
    if len(key) > VALUE_KEY_MAX_LENGTH:
        raise InvalidRequest(
            f"value: at most {VALUE_KEY_MAX_LENGTH} characters once case-folded; give a shorter "
            "`value` (by default the statement, or else the first quote, is the value).",
            field="value",
        )
    start = statement.valid_from or min(q.observation.occurred_at for q in located)
    if statement.valid_until is not None and statement.valid_until <= start:
        raise InvalidRequest("valid_until must come after valid_from.", field="valid_until")
    cardinality = predicate_cardinality(project=ctx.project, name=statement.predicate)
    statements = [
        (
            q.observation,
            Extraction(
                predicate=statement.predicate,
                cardinality=cardinality,
                value=value,
                value_key=key,
                statement=text,
                quote=bytes(q.observation.content)[q.byte_start : q.byte_end].decode("utf-8"),
                byte_start=q.byte_start,
                byte_end=q.byte_end,
                valid_from=start,
                valid_precision="instant",
            ),
        )
        for q in located
    ]
    batch = SubjectBatch(ctx)
    batch.load(statements)
    changes = [batch.apply(observation, extraction) for observation, extraction in statements]
    fact = changes[0][0][0]  # the fact the first quote created or restated
    batch.flush()
    if web:
        row = Evidence.objects.filter(
            fact=fact,
            observation=first.observation,
            byte_start=first.byte_start,
            byte_end=first.byte_end,
            known_until__isnull=True,
        ).exclude(kind=EvidenceKind.WEB)
        web_evidence_add(row.get(), web)
    _end_validity(ctx, fact, statement)
    return fact


def fact_author(
    *,
    project: Project,
    subject_id: str,
    statement: AuthoredStatement,
    authored_by: str | None,
    actor: str,
    web_evidence: Sequence[WebQuoteIn] = (),
    message_evidence: Sequence[MessageQuoteIn] = (),
    extracted_by: str = "",
    request_id: str = "",
) -> ResolvedCitation:
    """An authored record: a fact a person states directly, audited like any write.

    With ``web_evidence`` the record is backed by quotes Attest verified on web pages;
    each is checked (see citations.selectors.web_evidence) before anything is written,
    and without an ``authored_by`` the credential's actor is the author. With
    ``message_evidence`` it is a fact the client extracted from stored messages of the
    subject (see ``write_client``): each quote is found in its message before anything is
    written. Returns the fact as resolve shows it.
    """
    web = checked_web_quotes(web_evidence)
    with transaction.atomic():
        subject = locked_subject(project, subject_id)
        # Before anything is written: a refusal must leave nothing behind.
        predicate_cardinality(project=project, name=statement.predicate)
        located = located_quotes(project, subject, message_evidence)
        ctx = LedgerWrite(
            project,
            subject,
            ingest_generation(project),
            known_now(project, subject),
            authored_by=authored_by or actor,
            extracted_by=(extracted_by or DEFAULT_EXTRACTED_BY) if located else "",
        )
        if located:
            fact = write_client(ctx, statement, located, web)
        else:
            fact = write_authored(ctx, statement, web)
        audit_record(
            project=project,
            operation="fact.author",
            actor=actor,
            object_ids=[str(fact.pk)],
            source_count=(len(located) or 1) + len(web),
            request_id=request_id,
        )
    with read_snapshot():
        return resolved_citation(project=project, fact_id=fact.pk)
