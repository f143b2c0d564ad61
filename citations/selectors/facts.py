"""Reads of the fact ledger: resolve a citation with verified evidence, and recall facts."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from attest.errors import AttestError, NotFound
from attest.prepared import PreparedQuery
from citations.cursor import BadCursor, next_page, position_after
from citations.models import (
    Evidence,
    EvidenceKind,
    FactVersion,
    Observation,
    Project,
)
from citations.selectors.fact_views import (
    FactPage,
    FactView,
    bad_after,
    fact_view,
    iso_utc,
)
from citations.selectors.ranked import ranked_facts
from citations.selectors.web_evidence import source_retracted, web_source_intact

RESOLVE_DEFAULT_LIMIT = 8
RESOLVE_MAX_LIMIT = 32
PAGE_BYTES = 256 * 1024
CONTEXT_BYTES = 240
RECALL_MAX = 200
RECALL_DEFAULT_LIMIT = 50


class InvalidCitation(AttestError):
    status_code = 400
    code = "invalid_citation"
    message = "The citation ID or the page parameters are malformed."


class CitationLimit(AttestError):
    status_code = 422
    code = "citation_limit"
    message = "The source text is too large to return; use a subject export instead."


class EvidenceMismatch(AttestError):
    status_code = 500
    code = "evidence_mismatch"
    message = (
        "The stored source bytes do not match the recorded evidence, so no evidence is "
        "returned; quote the X-Request-ID when reporting it."
    )


# No time zone's offset is past 14 hours (PostgreSQL refuses one past 15:59).
MAX_OFFSET = timedelta(hours=14)


# --- resolve ---------------------------------------------------------------


@dataclass(frozen=True)
class VerifiedEvidence:
    """An evidence row whose quote was just re-read from the message bytes and checked."""

    evidence: Evidence
    quote: str
    context: str
    context_complete: bool
    # Web evidence only: whether a later Crossref lookup found the page's paper retracted.
    source_retracted: bool | None = None

    @property
    def observation(self) -> Observation:
        return self.evidence.observation

    @property
    def web(self) -> Any:
        return self.evidence.web if self.evidence.kind == EvidenceKind.WEB else None


@dataclass(frozen=True)
class ResolvedCitation(FactView):
    """One page of a fact's evidence, and the cursor of the next page if there is one."""

    evidence: list[VerifiedEvidence]
    next: dict[str, str] | None

    @property
    def source_count(self) -> int:
        return len(self.evidence)


def _char_start(content: bytes, index: int) -> int:
    """Move ``index`` forward to the first byte of a UTF-8 character."""
    while 0 < index < len(content) and content[index] & 0xC0 == 0x80:
        index += 1
    return index


def _char_end(content: bytes, index: int) -> int:
    """Move ``index`` back so the bytes before it end on a whole UTF-8 character."""
    while 0 < index < len(content) and content[index] & 0xC0 == 0x80:
        index -= 1
    return index


def verified_web_evidence(evidence: Evidence) -> VerifiedEvidence:
    """Check the receipt's signature and the quote's hash again, or refuse."""
    if not web_source_intact(evidence):
        raise EvidenceMismatch(details={"evidence_id": evidence.pk})
    web = evidence.web
    return VerifiedEvidence(evidence, web.quote, "", False, source_retracted(web))


def verified_evidence(evidence: Evidence) -> VerifiedEvidence:
    """Re-read the message bytes and check them against the evidence, or refuse."""
    if evidence.kind == EvidenceKind.WEB:
        return verified_web_evidence(evidence)
    observation = evidence.observation
    content = bytes(observation.content)
    start, end = evidence.byte_start, evidence.byte_end
    quote_bytes = content[start:end]
    if (
        hashlib.sha256(content).hexdigest() != observation.content_sha256
        or not 0 <= start < end <= len(content)
        or hashlib.sha256(quote_bytes).hexdigest() != evidence.quote_sha256
    ):
        raise EvidenceMismatch(details={"evidence_id": evidence.pk})
    ctx_start = _char_start(content, max(0, start - CONTEXT_BYTES))
    ctx_end = _char_end(content, min(len(content), end + CONTEXT_BYTES))
    try:
        quote = quote_bytes.decode("utf-8")
        context = content[ctx_start:ctx_end].decode("utf-8")
    except UnicodeDecodeError:
        raise EvidenceMismatch(details={"evidence_id": evidence.pk}) from None
    return VerifiedEvidence(
        evidence, quote, context, context_complete=ctx_start == 0 and ctx_end == len(content)
    )


def _row_bytes(row: VerifiedEvidence) -> int:
    size = len(row.quote.encode("utf-8")) + len(row.context.encode("utf-8"))
    web = row.web
    return size if web is None else size + len(web.receipt) + len(web.url) + len(web.final_url)


def resolve_scope(fact_id: uuid.UUID, known_at: datetime | None) -> str:
    """What a resolve cursor is bound to: one fact, as the ledger believed it at one time."""
    return f"resolve:{fact_id}:{iso_utc(known_at) or ''}"


def _resolve_version(
    current: bool, *, project: int, fact: uuid.UUID, known_at: datetime | None = None
) -> QuerySet[FactVersion]:
    """The fact's latest version (as believed at ``known_at``), with the fact and subject."""
    versions = FactVersion.objects.filter(project_id=project).filter(
        fact_id=fact,
        fact__erased_at__isnull=True,
        fact__subject__erased_at__isnull=True,
    )
    if not current:
        versions = versions.filter(known_from__lte=known_at).filter(
            Q(known_until__isnull=True) | Q(known_until__gt=known_at)
        )
    return versions.select_related("fact", "fact__subject", "retraction").order_by("-seq")[:1]


def _resolve_evidence(
    shape: tuple[bool, int],
    *,
    project: int,
    fact: uuid.UUID,
    after: int,
    known_at: datetime | None = None,
) -> QuerySet[Evidence]:
    """A page of the fact's evidence (one row more, to know whether another page follows)."""
    current, limit = shape
    evidence = Evidence.objects.filter(project_id=project).filter(
        fact_id=fact, observation__erased_at__isnull=True
    )
    if current:
        evidence = evidence.filter(known_until__isnull=True)
    else:
        evidence = evidence.filter(created_at__lte=known_at).filter(
            Q(known_until__isnull=True) | Q(known_until__gt=known_at)
        )
    return (
        evidence.filter(pk__gt=after)
        .select_related("observation", "web")
        .order_by("pk")[: limit + 1]
    )


# Compiled once per shape (see attest.prepared): every resolve sends these two.
_RESOLVE_VERSION = PreparedQuery(_resolve_version, project=int, fact=uuid.UUID, known_at=datetime)
_RESOLVE_EVIDENCE = PreparedQuery(
    _resolve_evidence, project=int, fact=uuid.UUID, after=int, known_at=datetime
)


def resolved_citation(
    *,
    project: Project,
    fact_id: uuid.UUID,
    limit: int = RESOLVE_DEFAULT_LIMIT,
    known_at: datetime | None = None,
    after: int = 0,
) -> ResolvedCitation:
    """The seed's resolve: a fact with a page of evidence, every byte checked on each call.

    With ``known_at`` the fact and its sources are those the ledger believed then;
    ``after`` is the last evidence ID of the previous page (its cursor, decoded).
    """
    scope = resolve_scope(fact_id, known_at)
    known = {} if known_at is None else {"known_at": known_at}
    # The latest version carries the fact: one query for both.
    found = _RESOLVE_VERSION.rows(known_at is None, project=project.pk, fact=fact_id, **known)
    if not found:
        raise NotFound("No fact with this ID exists in this project.")
    version = found[0]
    fact = version.fact
    rows = _RESOLVE_EVIDENCE.rows(
        (known_at is None, limit), project=project.pk, fact=fact_id, after=after, **known
    )
    budget = PAGE_BYTES - len(fact.statement.encode("utf-8"))
    page: list[VerifiedEvidence] = []
    last_id = None
    for source in rows[:limit]:
        # A mismatch raises before anything is returned: never a partial, wrong answer.
        row = verified_evidence(source)
        size = _row_bytes(row)
        if size > budget:
            if not page:
                raise CitationLimit(details={"evidence_id": source.pk, "bytes": size})
            break
        budget -= size
        page.append(row)
        last_id = source.pk
    next_cursor = None
    if len(page) < len(rows):
        next_cursor = next_page(scope=scope, position=[last_id])
    view = fact_view(version, known_at=known_at)
    return ResolvedCitation(
        view.fact, view.version, view.status, view.known, view.retraction, page, next_cursor
    )


# --- recall ----------------------------------------------------------------


def _recall_versions(
    shape: tuple,
    *,
    project: int,
    subject: str,
    known_at: datetime,
    valid_at: datetime,
    predicate: str | None = None,
    last_predicate: str | None = None,
    last_from: datetime | None = None,
    last_id: str | None = None,
) -> QuerySet[FactVersion]:
    """One slice of the versions recall reads, in the order pages go."""
    _, offset, size = shape
    # An unknown or erased subject has no versions: one query, no lookup of its own.
    versions = (
        FactVersion.objects.filter(project_id=project)
        .filter(
            subject__project_id=project,
            subject__external_id=subject,
            subject__erased_at__isnull=True,
        )
        .filter(known_from__lte=known_at, valid_from__lte=valid_at)
        .filter(Q(known_until__isnull=True) | Q(known_until__gt=known_at))
        .filter(Q(valid_until__isnull=True) | Q(valid_until__gte=valid_at))
        .filter(fact__erased_at__isnull=True)
        .select_related("fact", "fact__subject", "retraction")
        .order_by("predicate", "-valid_from", "fact_id")
    )
    if predicate:
        versions = versions.filter(predicate=predicate)
    if last_predicate is not None:
        versions = versions.filter(
            Q(predicate__gt=last_predicate)
            | Q(predicate=last_predicate, valid_from__lt=last_from)
            | Q(predicate=last_predicate, valid_from=last_from, fact_id__gt=last_id)
        )
    return versions[offset : offset + size]


# Compiled once per shape (see attest.prepared). A shape with a cursor's ``last_id`` (a
# string Django reads as a UUID) is compiled each time, as before.
_RECALL_VERSIONS = PreparedQuery(
    _recall_versions,
    project=int,
    subject=str,
    known_at=datetime,
    valid_at=datetime,
    predicate=str,
    last_predicate=str,
    last_from=datetime,
    last_id=str,
)


def _in_pages(project: int, values: dict[str, Any], size: int) -> Iterator[FactVersion]:
    """The versions ``size`` at a time, a query each: a page's worth is usually one query
    (a server-side cursor would take three round trips: declare, fetch, close)."""
    offset = 0
    while True:
        batch = _RECALL_VERSIONS.rows(
            (tuple(sorted(values)), offset, size), project=project, **values
        )
        yield from batch
        if len(batch) < size:
            return
        offset += size


def recalled_facts(
    *,
    project: Project,
    subject_id: str,
    predicate: str | None = None,
    query: str | None = None,
    valid_at: datetime | None = None,
    known_at: datetime | None = None,
    limit: int = RECALL_DEFAULT_LIMIT,
    after: Any = None,
) -> FactPage:
    """Facts about a subject true at ``valid_at`` as believed at ``known_at``, a page at a time.

    Both default to now; a ``known_at`` alone also sets ``valid_at`` (what was believed
    true at that time). An end date recorded after ``known_at`` is not shown. Pages go
    by predicate, then latest start first; with ``query``, by relevance to it
    (citations.selectors.ranked).
    """
    if query:
        return ranked_facts(
            project=project,
            subject_id=subject_id,
            query=query,
            predicate=predicate,
            valid_at=valid_at,
            known_at=known_at,
            limit=limit,
            after=after,
        )
    scope = "recall:" + json.dumps(
        [subject_id, predicate, query, iso_utc(valid_at), iso_utc(known_at)]
    )
    try:
        position = position_after(after, scope=scope, shape=(str, str, str))
    except BadCursor:
        raise bad_after() from None
    now = timezone.now()
    as_of_known = known_at is not None
    known_at = known_at or now
    valid_at = valid_at or known_at
    values: dict[str, Any] = {"subject": subject_id, "known_at": known_at, "valid_at": valid_at}
    if predicate:
        values["predicate"] = predicate
    if position is not None:
        values["last_predicate"], values["last_id"] = position[0], position[2]
        values["last_from"] = parse_datetime(position[1])
    facts: list[FactView] = []
    for version in _in_pages(project.pk, values, limit + 1):
        # The database filter is inclusive on both ends; the interval rules are exact.
        if not (
            version.valid_interval.contains(valid_at) and version.known_interval.contains(known_at)
        ):
            continue
        if len(facts) == limit:
            last = facts[-1].version
            return FactPage(
                facts,
                next_page(
                    scope=scope,
                    position=[last.predicate, iso_utc(last.valid_from), str(last.fact_id)],
                ),
            )
        facts.append(fact_view(version, known_at=known_at if as_of_known else None))
    return FactPage(facts)


INVENTORY_DEFAULT_LIMIT = 50
INVENTORY_MAX_LIMIT = 200


def fact_inventory(
    *,
    project: Project,
    subject_id: str | None = None,
    predicate: str | None = None,
    status: str | None = None,
    limit: int = INVENTORY_DEFAULT_LIMIT,
    after: Any = None,
) -> FactPage:
    """Every fact of the project as its latest version shows it, newest first, a page at a time."""
    scope = "facts:" + json.dumps([subject_id, predicate, status])
    try:
        position = position_after(after, scope=scope, shape=(str, str))
    except BadCursor:
        raise bad_after() from None
    later = FactVersion.objects.filter(fact=OuterRef("fact"), seq__gt=OuterRef("seq"))
    versions = (
        FactVersion.objects.for_project(project)
        .filter(~Exists(later), fact__erased_at__isnull=True, subject__erased_at__isnull=True)
        .select_related("fact", "fact__subject", "retraction")
        .order_by("-fact__created_at", "-fact_id")
    )
    if subject_id is not None:
        versions = versions.filter(subject__external_id=subject_id)
    if predicate is not None:
        versions = versions.filter(predicate=predicate)
    if status is not None:
        versions = versions.filter(status=status)
    if position is not None:
        created_at, fact_id = parse_datetime(position[0]), position[1]
        versions = versions.filter(
            Q(fact__created_at__lt=created_at) | Q(fact__created_at=created_at, fact_id__lt=fact_id)
        )
    rows = list(versions[: limit + 1])
    page = [fact_view(version) for version in rows[:limit]]
    if len(rows) <= limit:
        return FactPage(page)
    last = page[-1].fact
    return FactPage(
        page, next_page(scope=scope, position=[last.created_at.isoformat(), str(last.pk)])
    )
