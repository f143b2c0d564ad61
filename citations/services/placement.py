"""Where statements go on a subject's timeline: the cases of supersession and evidence.

``SubjectBatch`` reads the believed versions a set of statements can touch (and their
sources) once, places every statement in memory by the rules below (a restatement,
a late message that moves a start earlier, a new value that closes the one holding
at its start and is closed by any successor, a restatement said after a new value
that splits off as a fact of its own), then writes the outcome together: new facts,
one version per fact whose belief changed and the evidence rows, each kind in one
bulk insert, after the updates that close what stops being believed. A message, a
request of a hundred, or a subject's whole history in a rebuild costs the same few
queries.

Every change of one write shares its known time (``LedgerWrite.now``), so a belief
held only between two statements of one batch has an empty known interval; it is
not written, and what the ledger shows at any known time is what it would show had
each statement been written on its own. Known time stays append-only: a stored
version whose belief changes is closed at ``now`` and followed by the next ``seq``;
moved evidence closes its row and gets a new one.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from django.db import connection
from django.db.models import Q, QuerySet

from attest.prepared import PreparedQuery, listed, one_of
from citations.extract.extractor import EXTRACTOR_VERSION, Extraction, statements
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
from citations.services.rows import Statement, close_known, execute_together, inserts
from citations.services.timeline import current_status
from citations.services.web_evidence import web_sources_copy


@dataclass(frozen=True)
class LedgerWrite:
    """What every change of one write shares: where it happens, its known time, its author.

    ``authored_by`` is set when a person states the facts directly (authored records and
    corrections): their evidence carries the name instead of an extractor version.
    ``extracted_by`` is set when a client extracted the facts from stored messages itself:
    the evidence rows are then message rows with extractor version ``client:<name>``
    (and ``authored_by`` the client that recorded them).
    """

    project: Project
    subject: Subject
    generation: Generation
    now: datetime
    authored_by: str = ""
    extracted_by: str = ""

    @property
    def extractor_version(self) -> str:
        if self.extracted_by:
            return CLIENT_PREFIX + self.extracted_by
        return AUTHORED if self.authored_by else EXTRACTOR_VERSION

    @property
    def evidence_kind(self) -> str:
        if self.authored_by and not self.extracted_by:
            return EvidenceKind.AUTHORED
        return EvidenceKind.MESSAGE


Change = tuple[Fact, str]
# The extractor version of evidence a person wrote: no extractor read it.
AUTHORED = "authored"
# The extractor version of message evidence a client extracted: ``client:<extracted_by>``.
CLIENT_PREFIX = "client:"


# Where a statement falls in a subject's timeline: when it says the fact began, then when
# it was said, then the message ID, the ordinal and the place in the message. Messages sent
# at the same instant are ordered by the key, never by arrival, so every arrival order
# gives one timeline. The comparison is done here, not by the database, whose collation
# could order message IDs differently from one server to the next.
OrderKey = tuple[datetime, datetime, str, int, int]
_EARLIEST = datetime.min.replace(tzinfo=UTC)


def statement_key(observation: Observation, start: datetime | None, byte_start: int) -> OrderKey:
    return (
        start or _EARLIEST,
        observation.occurred_at,
        observation.message_id,
        observation.ordinal,
        byte_start,
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


def evidence_from(ctx: LedgerWrite, source: Evidence | _Source, fact: Fact) -> Evidence:
    """A new (unsaved) evidence row for ``fact`` copying ``source``, a stored row being moved
    or a source a batch placed: its message, bytes, quote hash, author and asserted time,
    known from the write's ``now``."""
    return Evidence(
        project=ctx.project,
        fact=fact,
        observation=source.observation,
        kind=source.kind,
        byte_start=source.byte_start,
        byte_end=source.byte_end,
        quote_sha256=source.quote_sha256,
        extractor_version=source.extractor_version,
        authored_by=source.authored_by,
        asserted_from=source.asserted_from,
        asserted_precision=source.asserted_precision,
        created_at=ctx.now,
    )


def move_evidence(ctx: LedgerWrite, sources: list[Evidence], fact: Fact) -> None:
    Evidence.objects.for_project(ctx.project).filter(
        pk__in=[e.pk for e in sources], known_until__isnull=True
    ).update(known_until=ctx.now)
    moved = Evidence.objects.bulk_create(evidence_from(ctx, e, fact) for e in sources)
    web_sources_copy(sources, moved)


@dataclass
class _Source:
    """One evidence row: stored (``row``) or written at flush."""

    observation: Observation
    byte_start: int
    byte_end: int
    asserted_from: datetime | None
    asserted_precision: str
    quote_sha256: str
    extractor_version: str
    authored_by: str
    kind: str
    row: Evidence | None = None
    # The stored row this source was moved from (a web row's page and receipt go along).
    moved_from: Evidence | None = None

    @property
    def key(self) -> OrderKey:
        return statement_key(self.observation, self.asserted_from, self.byte_start)

    @property
    def span(self) -> tuple:
        return (self.observation.pk, self.byte_start, self.byte_end)

    def moved(self) -> _Source:
        return _Source(
            self.observation,
            self.byte_start,
            self.byte_end,
            self.asserted_from,
            self.asserted_precision,
            self.quote_sha256,
            self.extractor_version,
            self.authored_by,
            self.kind,
            moved_from=self.row or self.moved_from,
        )


@dataclass
class _Belief:
    """What the ledger will believe about one fact once the batch is written."""

    fact: Fact
    stored: FactVersion | None  # its believed version before the batch (None: a new fact)
    valid_from: datetime
    valid_until: datetime | None
    valid_from_inclusive: bool
    valid_until_inclusive: bool
    valid_precision: str
    superseded_by: uuid.UUID | None = None  # the pk of the fact that ends it, and of the
    supersession_source: uuid.UUID | None = None  # message that said so (no row read)
    sources: list[_Source] = field(default_factory=list)

    @classmethod
    def of_stored(cls, version: FactVersion) -> _Belief:
        return cls(
            fact=version.fact,
            stored=version,
            valid_from=version.valid_from,
            valid_until=version.valid_until,
            valid_from_inclusive=version.valid_from_inclusive,
            valid_until_inclusive=version.valid_until_inclusive,
            valid_precision=version.valid_precision,
            superseded_by=version.superseded_by_id,
            supersession_source=version.supersession_source_observation_id,
        )

    @property
    def status(self) -> str:
        return "current" if self.valid_until is None else "validity_closed"

    def first_source(self) -> _Source:
        return min(self.sources, key=lambda source: source.key)

    def order_key(self) -> OrderKey:
        """Where the fact sits on the timeline: its start, then its first source's key."""
        return (self.valid_from, *self.first_source().key[1:])

    def _fields(self) -> tuple:
        return (
            self.valid_from,
            self.valid_until,
            self.valid_from_inclusive,
            self.valid_until_inclusive,
            self.valid_precision,
            self.superseded_by,
            self.supersession_source,
        )

    def changed(self) -> bool:
        stored = self.stored
        if stored is None:
            return True
        return self._fields() != (
            stored.valid_from,
            stored.valid_until,
            stored.valid_from_inclusive,
            stored.valid_until_inclusive,
            stored.valid_precision,
            stored.superseded_by_id,
            stored.supersession_source_observation_id,
        )

    def version(self, now: datetime) -> FactVersion:
        fact = self.fact
        version = FactVersion(
            fact=fact,
            seq=self.stored.seq + 1 if self.stored else 1,
            project_id=fact.project_id,
            subject_id=fact.subject_id,
            predicate=fact.predicate,
            functional=fact.functional,
            valid_from=self.valid_from,
            valid_until=self.valid_until,
            valid_from_inclusive=self.valid_from_inclusive,
            valid_until_inclusive=self.valid_until_inclusive,
            valid_precision=self.valid_precision,
            superseded_by_id=self.superseded_by,
            supersession_source_observation_id=self.supersession_source,
            known_from=now,
        )
        version.status = current_status(version)
        return version


@dataclass
class _Placement:
    containing: _Belief | None  # believed to hold at the statement's start
    successor: _Belief | None  # the first one starting after it
    restated_later: list[_Source]  # sources of ``containing`` restating it after the start


# What placement reads before it places a batch, compiled once (attest.prepared): the
# lists go in one parameter each. Compiling both each call was about a fifth of a
# one-message ingest's Python time.


def _touched_versions(
    vendor: str,
    *,
    project: int,
    subject: int,
    one: str,
    predicates: str | None = None,
    keys: str | None = None,
) -> QuerySet[FactVersion]:
    """The subject's believed versions of the one-value predicates ``one`` (each a list,
    see attest.prepared.listed) and, with ``predicates`` and ``keys``, its open versions
    of those predicates with those value keys (the caller keeps the pairs it asked for)."""
    predicate = '"citations_factversion"."predicate"'
    wanted = Q(one_of(vendor, predicate, "text", one))
    if predicates is not None:
        # The fact's table is joined by select_related("fact") below, under its own name.
        wanted |= Q(
            one_of(vendor, predicate, "text", predicates),
            one_of(vendor, '"citations_fact"."value_key"', "text", keys),
            valid_until__isnull=True,
        )
    return (
        FactVersion.objects.filter(project_id=project)
        .filter(wanted, subject_id=subject, known_until__isnull=True)
        .select_related("fact")
        .order_by("valid_from", "seq")
    )


_TOUCHED_VERSIONS = PreparedQuery(
    _touched_versions, project=int, subject=int, one=str, predicates=str, keys=str
)


def _touched_sources(
    vendor: str, *, project: int, functional: str, many: str, observations: str
) -> QuerySet[Evidence]:
    """The open sources of the facts ``functional``, and those of the facts ``many`` that
    come from the messages ``observations`` (each a list, see attest.prepared.listed)."""
    fact = '"citations_evidence"."fact_id"'
    return (
        Evidence.objects.filter(project_id=project)
        .filter(
            Q(one_of(vendor, fact, "uuid", functional))
            | Q(
                one_of(vendor, fact, "uuid", many),
                one_of(vendor, '"citations_evidence"."observation_id"', "uuid", observations),
            ),
            known_until__isnull=True,
        )
        .select_related("observation")
        # The text is read only to split a fact (rare): not for every source.
        .defer("observation__content")
        .order_by("pk")
    )


_TOUCHED_SOURCES = PreparedQuery(
    _touched_sources, project=int, functional=str, many=str, observations=str
)


class SubjectBatch:
    """Statements of one subject placed in memory and written together (see the module)."""

    def __init__(self, ctx: LedgerWrite) -> None:
        self.ctx = ctx
        self.functional: dict[str, list[_Belief]] = {}
        self.many: dict[tuple[str, str], _Belief] = {}
        self.beliefs: dict[object, _Belief] = {}
        self.closed_evidence: list[int] = []

    # --- reading what the statements can touch ---------------------------------

    def load(self, statements: Iterable[tuple[Observation, Extraction]]) -> None:
        """Read the believed versions these statements can touch, and their sources.

        A one-value predicate's whole believed timeline (placement compares with every
        fact on it); of values among many only the open fact with the same value, and
        of its sources only those from the batch's own messages (the one thing a
        restatement checks).
        """
        statements = list(statements)
        one = {e.predicate for _, e in statements if e.cardinality == "one"}
        many = {(e.predicate, e.value_key) for _, e in statements if e.cardinality != "one"}
        self.functional.update({predicate: [] for predicate in one})
        if not one and not many:
            return
        vendor = connection.vendor
        wanted: dict[str, Any] = {"one": listed(vendor, one)}
        if many:
            wanted["predicates"] = listed(vendor, {predicate for predicate, _ in many})
            wanted["keys"] = listed(vendor, {key for _, key in many})
        versions = _TOUCHED_VERSIONS.rows(
            vendor, project=self.ctx.project.pk, subject=self.ctx.subject.pk, **wanted
        )
        many_ids = []
        for version in versions:
            belief = _Belief.of_stored(version)
            if version.functional and version.predicate in one:
                self.functional[version.predicate].append(belief)
            elif (version.predicate, version.fact.value_key) in many:
                self.many[(version.predicate, version.fact.value_key)] = belief
                many_ids.append(version.fact_id)
            else:
                continue
            self.beliefs[version.fact_id] = belief
        if not self.beliefs:
            return  # nothing stored that these statements touch: no sources to read
        functional_ids = set(self.beliefs) - set(many_ids)
        observations = {observation.pk for observation, _ in statements}
        rows = _TOUCHED_SOURCES.rows(
            vendor,
            project=self.ctx.project.pk,
            functional=listed(vendor, functional_ids),
            many=listed(vendor, many_ids),
            observations=listed(vendor, observations),
        )
        for row in rows:
            self.beliefs[row.fact_id].sources.append(
                _Source(
                    row.observation,
                    row.byte_start,
                    row.byte_end,
                    row.asserted_from,
                    row.asserted_precision,
                    row.quote_sha256,
                    row.extractor_version,
                    row.authored_by,
                    row.kind,
                    row=row,
                )
            )

    # --- placing one statement --------------------------------------------------

    def apply(self, observation: Observation, extraction: Extraction) -> list[Change]:
        """Place one statement (``load`` must have seen it); the facts it changed, and how."""
        if extraction.cardinality != "one":
            key = (extraction.predicate, extraction.value_key)
            believed = self.many.get(key)
            if believed is not None:
                return self._restate(believed, observation, extraction)
            belief = self._new_fact(observation, extraction)
            self.many[key] = belief
            return [(belief.fact, "created")]
        placement = self._place(observation, extraction)
        containing, successor = placement.containing, placement.successor
        if containing is not None and containing.fact.value_key == extraction.value_key:
            return self._restate(containing, observation, extraction)
        if (
            not placement.restated_later
            and successor is not None
            and successor.fact.value_key == extraction.value_key
        ):
            return self._move_start_earlier(placement, observation, extraction)
        return self._supersede(placement, observation, extraction)

    def _place(self, observation: Observation, extraction: Extraction) -> _Placement:
        start = extraction.valid_from
        new_key = statement_key(observation, start, extraction.byte_start)
        keyed = sorted(
            ((belief.order_key(), belief) for belief in self.functional[extraction.predicate]),
            key=lambda pair: pair[0],
        )
        before = [belief for key, belief in keyed if key < new_key]
        after = [belief for key, belief in keyed if key > new_key]
        containing = before[-1] if before else None
        if containing is not None and (
            containing.valid_until is not None and containing.valid_until < start
        ):
            containing = None
        restated_later = []
        if containing is not None:
            restated_later = [
                source
                for source in sorted(containing.sources, key=lambda source: source.key)
                if source.asserted_from is not None and source.key > new_key
            ]
        return _Placement(containing, after[0] if after else None, restated_later)

    def _restate(
        self, belief: _Belief, observation: Observation, extraction: Extraction
    ) -> list[Change]:
        """The same claim again, within its validity: more evidence, not a second fact."""
        source = self._source(observation, extraction)
        if all(known.span != source.span for known in belief.sources):
            belief.sources.append(source)
        return [(belief.fact, "evidence_added")]

    def _move_start_earlier(
        self, placement: _Placement, observation: Observation, extraction: Extraction
    ) -> list[Change]:
        """The next fact has this value: it began earlier than known (a late message)."""
        successor, containing = placement.successor, placement.containing
        assert successor is not None  # apply() moves a start only toward a successor
        changes: list[Change] = []
        if containing is not None:
            _close_validity(containing, extraction.valid_from, successor.fact, observation)
            changes.append((containing.fact, "validity_closed"))
        successor.valid_from = extraction.valid_from
        successor.valid_precision = extraction.valid_precision
        self._restate(successor, observation, extraction)
        return [(successor.fact, "evidence_added"), *changes]

    def _supersede(
        self, placement: _Placement, observation: Observation, extraction: Extraction
    ) -> list[Change]:
        """A new value: it closes the one holding at its start and is closed by any successor."""
        containing, successor = placement.containing, placement.successor
        fact = fact_from(self.ctx, observation, extraction)
        changes: list[Change] = [(fact, "created")]
        if containing is not None:
            # Where the holding fact used to end: a split-off restatement ends there.
            ending = (
                containing.valid_until,
                containing.valid_until_inclusive,
                containing.superseded_by,
                containing.supersession_source,
            )
            _close_validity(containing, extraction.valid_from, fact, observation)
            changes.append((containing.fact, "validity_closed"))
            if placement.restated_later:
                successor = self._split_off(containing, ending, placement.restated_later)
                changes.append((successor.fact, "created"))
        belief = self._new_fact(observation, extraction, fact=fact)
        if successor is not None:
            # Arrived out of order: a later-starting fact already exists and ends this one.
            belief.valid_until = max(successor.valid_from, belief.valid_from)
            belief.superseded_by = successor.fact.pk
            belief.supersession_source = successor.first_source().observation.pk
        return changes

    def _split_off(self, version: _Belief, ending: tuple, sources: list[_Source]) -> _Belief:
        """Give ``sources`` (restating ``version``'s value later on) a fact of their own."""
        first = sources[0]
        assert first.asserted_from is not None  # _place() kept restatements with a start
        old = version.fact
        fact = Fact(
            project=self.ctx.project,
            subject=self.ctx.subject,
            predicate=old.predicate,
            functional=True,
            value=old.value,
            value_key=old.value_key,
            statement=statement_of(
                first.observation,
                first.byte_start,
                first.byte_end,
                first.authored_by,
                first.extractor_version,
            ),
            source_role=first.observation.role,
            generation=self.ctx.generation,
            created_at=self.ctx.now,
        )
        valid_until, until_inclusive, superseded_by, supersession_source = ending
        belief = _Belief(
            fact=fact,
            stored=None,
            valid_from=first.asserted_from,
            valid_until=valid_until,
            valid_from_inclusive=True,
            valid_until_inclusive=until_inclusive,
            valid_precision=first.asserted_precision or "instant",
            superseded_by=superseded_by,
            supersession_source=supersession_source,
        )
        # The sources now support the new fact; the closed one keeps those before the cut.
        moving = {id(source) for source in sources}
        version.sources = [source for source in version.sources if id(source) not in moving]
        for source in sources:
            if source.row is not None:
                self.closed_evidence.append(source.row.pk)
            belief.sources.append(source.moved())
        self._admit(belief)
        return belief

    def _new_fact(
        self, observation: Observation, extraction: Extraction, *, fact: Fact | None = None
    ) -> _Belief:
        belief = _Belief(
            fact=fact or fact_from(self.ctx, observation, extraction),
            stored=None,
            valid_from=extraction.valid_from,
            valid_until=None,
            valid_from_inclusive=True,
            valid_until_inclusive=False,
            valid_precision=extraction.valid_precision,
            sources=[self._source(observation, extraction)],
        )
        self._admit(belief)
        return belief

    def _admit(self, belief: _Belief) -> None:
        self.beliefs[belief.fact.pk] = belief
        if belief.fact.functional:
            self.functional[belief.fact.predicate].append(belief)

    def _source(self, observation: Observation, extraction: Extraction) -> _Source:
        quote = bytes(observation.content)[extraction.byte_start : extraction.byte_end]
        return _Source(
            observation,
            extraction.byte_start,
            extraction.byte_end,
            extraction.valid_from,
            extraction.valid_precision,
            hashlib.sha256(quote).hexdigest(),
            self.ctx.extractor_version,
            self.ctx.authored_by,
            self.ctx.evidence_kind,
        )

    # --- writing ----------------------------------------------------------------

    def status(self, fact: Fact) -> str:
        """The status of ``fact``'s believed version once the batch is written."""
        return self.beliefs[fact.pk].status

    def flush(self) -> None:
        """Write the batch: one statement per kind of row, whatever the number of
        statements, all sent in one round trip where the database takes them together."""
        ctx = self.ctx
        changed = [belief for belief in self.beliefs.values() if belief.changed()]
        written = [
            (belief.fact, source)
            for belief in self.beliefs.values()
            for source in belief.sources
            if source.row is None
        ]
        # The order the constraints need: a new fact before its versions and evidence, and
        # the known intervals that close before the versions that follow them.
        sql = inserts([belief.fact for belief in changed if belief.stored is None])
        sql += self._closing([belief.stored.pk for belief in changed if belief.stored])
        sql += inserts([belief.version(ctx.now) for belief in changed])
        evidence = [evidence_from(ctx, source, fact) for fact, source in written]
        moved = [source.moved_from for _, source in written]
        if not any(moved):
            sql += inserts(evidence)
        execute_together(sql)
        if any(moved):
            # A moved web source takes its page and receipt along: the new rows' keys are
            # needed, which bulk_create reads back.
            Evidence.objects.bulk_create(evidence, batch_size=1000)
            pairs = [(old, row) for old, row in zip(moved, evidence, strict=True) if old]
            web_sources_copy([old for old, _ in pairs], [new for _, new in pairs])

    def _closing(self, versions: list[int]) -> list[Statement]:
        """Close the known intervals of the versions and evidence rows that stop being believed."""
        ctx = self.ctx
        sql = []
        if versions:
            # The one update append-only versions allow: the known interval closes once.
            sql.append(
                close_known(
                    FactVersion,
                    project_id=ctx.project.pk,
                    pks=versions,
                    now=ctx.now,
                    status="knowledge_closed",
                )
            )
        if self.closed_evidence:
            sql.append(
                close_known(
                    Evidence, project_id=ctx.project.pk, pks=self.closed_evidence, now=ctx.now
                )
            )
        return sql


def _close_validity(belief: _Belief, at: datetime, by_fact: Fact, source: Observation) -> None:
    """``belief``'s fact stopped being true at ``at``, superseded by ``by_fact``."""
    valid = Interval(
        belief.valid_from,
        belief.valid_until,
        belief.valid_from_inclusive,
        belief.valid_until_inclusive,
    ).closed_at(max(at, belief.valid_from))
    belief.valid_until, belief.valid_until_inclusive = valid.end, valid.end_inclusive
    belief.superseded_by, belief.supersession_source = by_fact.pk, source.pk


def statement_of(
    observation: Observation,
    byte_start: int,
    byte_end: int,
    authored_by: str,
    extractor_version: str = "",
) -> str:
    """The statement the extractor reads at these bytes of the message.

    The extractor is deterministic, so reading the message again (at the time the
    sender gave) yields the statement it gave when the source was stored. A client's
    evidence is its quote: no extractor of ours read it.
    """
    content = bytes(observation.content)
    if extractor_version.startswith(CLIENT_PREFIX):
        return content[byte_start:byte_end].decode("utf-8")
    text = content.decode("utf-8")
    if authored_by:
        return text  # an authored record's message is its statement
    found = statements(text, occurred_at=observation.sent_at).get((byte_start, byte_end))
    if found is not None:
        return found[0]
    raise RuntimeError(
        f"bytes {byte_start}:{byte_end} of message {observation.pk} are not a statement "
        "the extractor finds in it"
    )


def apply_extraction(
    ctx: LedgerWrite, observation: Observation, extraction: Extraction
) -> list[Change]:
    """Place one statement and write it: a batch of one."""
    batch = SubjectBatch(ctx)
    batch.load([(observation, extraction)])
    changes = batch.apply(observation, extraction)
    batch.flush()
    return changes


def ingest_generation(project: Project) -> Generation:
    """The generation the built-in extractor's current rules write into."""
    generation, _ = Generation.objects.for_project(project).get_or_create(
        project=project,
        kind=Generation.Kind.INGEST,
        extractor_version=EXTRACTOR_VERSION,
    )
    return generation
