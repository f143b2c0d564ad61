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
from citations.extract.predicates import cardinality_of
from citations.models import Evidence, Fact, FactVersion, Observation, Project, Role, Subject
from citations.selectors import ResolvedCitation, resolved_citation
from citations.selectors.web_evidence import CheckedWebQuote, WebQuoteIn, checked_web_quotes
from citations.services.audit import audit_record
from citations.services.ingest import ingest_generation
from citations.services.placement import LedgerWrite, apply_extraction
from citations.services.reads import read_snapshot
from citations.services.timeline import known_now, revise
from citations.services.web_evidence import web_evidence_add

# The column that compares values (Fact.value_key) holds this many characters.
VALUE_KEY_CHARS = Fact._meta.get_field("value_key").max_length


@dataclass(frozen=True)
class AuthoredStatement:
    predicate: str  # empty in a correction: the retracted fact's
    statement: str
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
    if len(key) > VALUE_KEY_CHARS:
        # A long statement with no value of its own, or a value that grows when case-folded.
        raise InvalidRequest(
            f"value: at most {VALUE_KEY_CHARS} characters once case-folded; give a shorter "
            "`value` (by default the statement is the value).",
            field="value",
        )
    extraction = Extraction(
        predicate=statement.predicate,
        cardinality=cardinality_of(statement.predicate),
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
    return fact


def fact_author(
    *,
    project: Project,
    subject_id: str,
    statement: AuthoredStatement,
    authored_by: str | None,
    actor: str,
    web_evidence: Sequence[WebQuoteIn] = (),
    request_id: str = "",
) -> ResolvedCitation:
    """An authored record: a fact a person states directly, audited like any write.

    With ``web_evidence`` the record is backed by quotes Attest verified on web pages;
    each is checked (see citations.selectors.web_evidence) before anything is written,
    and without an ``authored_by`` the credential's actor is the author. Returns the fact
    as resolve shows it.
    """
    web = checked_web_quotes(web_evidence)
    with transaction.atomic():
        subject = locked_subject(project, subject_id)
        ctx = LedgerWrite(
            project,
            subject,
            ingest_generation(project),
            known_now(project, subject),
            authored_by=authored_by or actor,
        )
        fact = write_authored(ctx, statement, web)
        audit_record(
            project=project,
            operation="fact.author",
            actor=actor,
            object_ids=[str(fact.pk)],
            source_count=1 + len(web),
            request_id=request_id,
        )
    with read_snapshot():
        return resolved_citation(project=project, fact_id=fact.pk)
