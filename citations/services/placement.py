"""Where one statement goes on a subject's timeline: the cases of supersession and evidence."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime

from citations.extract.extractor import EXTRACTOR_VERSION, Extraction, extract
from citations.extract.intervals import Interval
from citations.models import (
    Evidence,
    EvidenceKind,
    Fact,
    FactVersion,
    Generation,
    Observation,
    Project,
    Subject,
)
from citations.services.timeline import (
    believed_versions,
    close_validity,
    current_status,
    first_version,
    revise,
)
from citations.web_evidence import web_sources_copy


@dataclass(frozen=True)
class LedgerWrite:
    """What every change of one write shares: where it happens, its known time, its author.

    ``authored_by`` is set when a person states the facts directly (authored records and
    corrections): their evidence carries the name instead of an extractor version.
    """

    project: Project
    subject: Subject
    generation: Generation
    now: datetime
    authored_by: str = ""

    @property
    def extractor_version(self) -> str:
        return AUTHORED if self.authored_by else EXTRACTOR_VERSION


Change = tuple[Fact, str]
# The extractor version of evidence a person wrote: no extractor read it.
AUTHORED = "authored"


# --- evidence ----------------------------------------------------------------


def _add_evidence(
    ctx: LedgerWrite,
    fact: Fact,
    observation: Observation,
    extraction: Extraction,
    *,
    new: bool = False,
) -> None:
    """Record that ``observation`` supports ``fact`` (once; ``new`` when it cannot yet)."""
    span = {
        "fact": fact,
        "observation": observation,
        "byte_start": extraction.byte_start,
        "byte_end": extraction.byte_end,
    }
    if not new and Evidence.objects.filter(**span, known_until__isnull=True).exists():
        return
    evidence_row(ctx, fact, observation, extraction).save()


def evidence_row(
    ctx: LedgerWrite, fact: Fact, observation: Observation, extraction: Extraction
) -> Evidence:
    quote = bytes(observation.content)[extraction.byte_start : extraction.byte_end]
    return Evidence(
        fact=fact,
        observation=observation,
        byte_start=extraction.byte_start,
        byte_end=extraction.byte_end,
        project=ctx.project,
        quote_sha256=hashlib.sha256(quote).hexdigest(),
        extractor_version=ctx.extractor_version,
        authored_by=ctx.authored_by,
        kind=EvidenceKind.AUTHORED if ctx.authored_by else EvidenceKind.MESSAGE,
        asserted_from=extraction.valid_from,
        asserted_precision=extraction.valid_precision,
        created_at=ctx.now,
    )


# Where a statement falls in a subject's timeline: when it says the fact began, then when
# it was said, then the message ID, the ordinal and the place in the message. Messages sent
# at the same instant are ordered by the key, never by arrival, so every arrival order
# gives one timeline. The comparison is done here, not by the database, whose collation
# could order message IDs differently from one server to the next.
OrderKey = tuple[datetime, datetime, str, int, int]
_EARLIEST = datetime.min.replace(tzinfo=UTC)


def _statement_key(observation: Observation, start: datetime | None, byte_start: int) -> OrderKey:
    return (
        start or _EARLIEST,
        observation.occurred_at,
        observation.message_id,
        observation.ordinal,
        byte_start,
    )


def _source_key(evidence: Evidence) -> OrderKey:
    return _statement_key(evidence.observation, evidence.asserted_from, evidence.byte_start)


def _sources_in_time_order(facts: list[Fact]) -> dict[object, list[Evidence]]:
    """The believed sources of each fact, in timeline order."""
    sources: dict[object, list[Evidence]] = {fact.pk: [] for fact in facts}
    rows = (
        Evidence.objects.filter(fact__in=[fact.pk for fact in facts], known_until__isnull=True)
        .select_related("observation")
        .order_by("pk")
    )
    for evidence in rows:
        sources[evidence.fact_id].append(evidence)
    for rows_of_fact in sources.values():
        rows_of_fact.sort(key=_source_key)
    return sources


def _first_source(fact: Fact) -> Observation:
    """The message that first stated the fact: it is what supersedes a predecessor."""
    return _sources_in_time_order([fact])[fact.pk][0].observation


# --- the cases of one extracted statement ------------------------------------


@dataclass
class _Placement:
    """Where a functional statement's start falls among the believed versions."""

    containing: FactVersion | None  # believed to hold at the start
    successor: FactVersion | None  # the first one starting after it
    restated_later: list[Evidence]  # sources of ``containing`` that restate it after the start


def apply_extraction(
    ctx: LedgerWrite, observation: Observation, extraction: Extraction
) -> list[Change]:
    if extraction.cardinality != "one":
        return _apply_many_valued(ctx, observation, extraction)
    placement = _place(ctx, observation, extraction)
    containing, successor = placement.containing, placement.successor
    if containing is not None and containing.fact.value_key == extraction.value_key:
        return restate(ctx, containing.fact, observation, extraction)
    if (
        not placement.restated_later
        and successor is not None
        and successor.fact.value_key == extraction.value_key
    ):
        return _move_start_earlier(ctx, placement, observation, extraction)
    return _supersede(ctx, placement, observation, extraction)


def _apply_many_valued(
    ctx: LedgerWrite, observation: Observation, extraction: Extraction
) -> list[Change]:
    """A value among many (likes): more evidence for the open fact with it, or a new fact."""
    # Only the open fact with this value matters: asking the database for it keeps a
    # message listing thousands of likes from reading every earlier one per item.
    version = (
        believed_versions(ctx.project, ctx.subject, extraction.predicate)
        .filter(fact__value_key=extraction.value_key, valid_until__isnull=True)
        .first()
    )
    if version is not None:
        return restate(ctx, version.fact, observation, extraction)
    return [(_new_fact(ctx, observation, extraction), "created")]


def _place(ctx: LedgerWrite, observation: Observation, extraction: Extraction) -> _Placement:
    """Put the statement among the believed versions, in timeline order (see ``OrderKey``)."""
    start = extraction.valid_from
    new_key = _statement_key(observation, start, extraction.byte_start)
    versions = list(believed_versions(ctx.project, ctx.subject, extraction.predicate))
    sources = _sources_in_time_order([version.fact for version in versions])
    keys = {
        version.fact_id: (version.valid_from, *_source_key(sources[version.fact_id][0])[1:])
        for version in versions
    }
    keyed = sorted(((keys[v.fact_id], v) for v in versions), key=lambda pair: pair[0])
    before = [version for key, version in keyed if key < new_key]
    after = [version for key, version in keyed if key > new_key]
    containing = before[-1] if before else None
    if containing is not None and (
        containing.valid_until is not None and containing.valid_until < start
    ):
        containing = None
    restated_later = []
    if containing is not None:
        # Sources of the holding value said after this statement (they arrived first).
        restated_later = [
            evidence
            for evidence in sources[containing.fact_id]
            if evidence.asserted_from is not None and _source_key(evidence) > new_key
        ]
    return _Placement(containing, after[0] if after else None, restated_later)


def restate(
    ctx: LedgerWrite, fact: Fact, observation: Observation, extraction: Extraction
) -> list[Change]:
    """The same claim again, within its validity: more evidence, not a second fact."""
    _add_evidence(ctx, fact, observation, extraction)
    return [(fact, "evidence_added")]


def _move_start_earlier(
    ctx: LedgerWrite, placement: _Placement, observation: Observation, extraction: Extraction
) -> list[Change]:
    """The next fact already has this value: it began earlier than known (a late message).

    It now starts here, closing whatever held before.
    """
    successor, containing = placement.successor, placement.containing
    start = extraction.valid_from
    changes: list[Change] = []
    if containing is not None:
        close_validity(
            version=containing, at=start, by_fact=successor.fact, source=observation, now=ctx.now
        )
        changes.append((containing.fact, "validity_closed"))
    revise(successor, now=ctx.now, valid_from=start, valid_precision=extraction.valid_precision)
    _add_evidence(ctx, successor.fact, observation, extraction)
    return [(successor.fact, "evidence_added"), *changes]


def _supersede(
    ctx: LedgerWrite, placement: _Placement, observation: Observation, extraction: Extraction
) -> list[Change]:
    """A new value: it closes the one holding at its start and is closed by any successor."""
    containing, successor = placement.containing, placement.successor
    fact = fact_from(ctx, observation, extraction)
    fact.save()
    changes: list[Change] = [(fact, "created")]
    if containing is not None:
        # The new fact starts inside the current one: that one stops being true here.
        close_validity(
            version=containing,
            at=extraction.valid_from,
            by_fact=fact,
            source=observation,
            now=ctx.now,
        )
        changes.append((containing.fact, "validity_closed"))
        if placement.restated_later:
            # The old value was stated again after the new one began (those messages
            # arrived first): it holds again from then, as a fact of its own.
            successor = _split_off(ctx, containing, placement.restated_later)
            changes.append((successor.fact, "created"))
    closed_by = None
    if successor is not None:
        # Arrived out of order: a later-starting fact already exists and ends this one.
        closed_by = (successor.fact, successor.valid_from, _first_source(successor.fact))
    _new_fact(ctx, observation, extraction, closed_by=closed_by, fact=fact)
    return changes


def _split_off(ctx: LedgerWrite, version: FactVersion, sources: list[Evidence]) -> FactVersion:
    """Give ``sources`` (restating ``version``'s value from a later start) a fact of their own.

    Called while ``version`` is closed at an earlier point by a new value: the value
    held again from the first of these sources until where ``version`` used to end.
    """
    first = sources[0]
    fact = Fact.objects.create(
        project=version.project,
        subject=version.subject,
        predicate=version.predicate,
        functional=True,
        value=version.fact.value,
        value_key=version.fact.value_key,
        statement=_statement_of(first),
        source_role=first.observation.role,
        generation=ctx.generation,
        created_at=ctx.now,
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
        known_from=ctx.now,
    )
    rest.status = current_status(rest)
    rest.save()
    # The sources now support the new fact; the closed one keeps the sources before the
    # cut. Membership is append-only in known time: the old rows are closed, not moved.
    move_evidence(ctx, sources, fact)
    return rest


def move_evidence(ctx: LedgerWrite, sources: list[Evidence], fact: Fact) -> None:
    Evidence.objects.for_project(ctx.project).filter(
        pk__in=[e.pk for e in sources], known_until__isnull=True
    ).update(known_until=ctx.now)
    moved = Evidence.objects.bulk_create(
        Evidence(
            project=ctx.project,
            fact=fact,
            observation=e.observation,
            kind=e.kind,
            byte_start=e.byte_start,
            byte_end=e.byte_end,
            quote_sha256=e.quote_sha256,
            extractor_version=e.extractor_version,
            authored_by=e.authored_by,
            asserted_from=e.asserted_from,
            asserted_precision=e.asserted_precision,
            created_at=ctx.now,
        )
        for e in sources
    )
    web_sources_copy(sources, moved)


def _statement_of(source: Evidence) -> str:
    """The statement the extractor reads at ``source``'s bytes of its message.

    The extractor is deterministic, so reading the message again gives the statement it
    gave when the source was stored, with the message's own closing punctuation.
    """
    observation = source.observation
    text = bytes(observation.content).decode("utf-8")
    if source.authored_by:
        return text  # an authored record's message is its statement
    for extraction in extract(text, occurred_at=observation.occurred_at):
        if (extraction.byte_start, extraction.byte_end) == (source.byte_start, source.byte_end):
            return extraction.statement
    raise RuntimeError(
        f"evidence {source.pk} is not a statement the extractor finds in its message"
    )


def fact_from(ctx: LedgerWrite, observation: Observation, extraction: Extraction) -> Fact:
    return Fact(
        project=ctx.project,
        subject=ctx.subject,
        predicate=extraction.predicate,
        functional=extraction.cardinality == "one",
        value=extraction.value,
        value_key=extraction.value_key,
        statement=extraction.statement,
        source_role=observation.role,
        generation=ctx.generation,
        created_at=ctx.now,
    )


def _new_fact(
    ctx: LedgerWrite,
    observation: Observation,
    extraction: Extraction,
    *,
    closed_by: tuple[Fact, datetime, Observation] | None = None,
    fact: Fact | None = None,
) -> Fact:
    """Store a fact (unless given, already saved) with its first version and evidence."""
    if fact is None:
        fact = fact_from(ctx, observation, extraction)
        fact.save()
    valid = Interval(extraction.valid_from)
    links = None
    if closed_by is not None:
        successor, until, source = closed_by
        valid = Interval(valid.start, max(until, valid.start))
        links = (successor, source)
    first_version(
        fact=fact, now=ctx.now, valid=valid, precision=extraction.valid_precision, closed_by=links
    )
    _add_evidence(ctx, fact, observation, extraction, new=True)
    return fact
