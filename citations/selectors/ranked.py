"""Ranked recall: a subject's facts ordered by the database's own full-text search.

The question is matched against ``citations_factsearch`` (a fact's statement and value,
and its predicate's name, description and synonyms; see citations.vocabulary), which
database triggers keep in step with the facts (migration 0012).

A question in plain words ("where does she live now?") must match a fact that shares
only one of its words, so the search is the OR of the question's words, never their AND
(``websearch_to_tsquery`` and ``plainto_tsquery`` AND them: every word, "she" and "now"
too, would have to be in the fact):

- PostgreSQL: the question goes through ``to_tsvector('english', …)``, the same parser,
  stop words and stemmer as the index; its lexemes are joined with ``|`` into a tsquery,
  matched with ``@@`` through the GIN index on (subject, vector) and ranked with
  ``ts_rank_cd`` (statement and value weigh more than the predicate's words). The search
  and the read of the found facts' versions are one statement, which sees one state by
  itself, so the read opens no transaction.
- SQLite: the question's words less the same English stop words, each a quoted FTS5
  string, joined with ``OR``; the FTS5 table stems both sides with the porter tokenizer,
  and ``bm25`` ranks. The search and the read of the versions are two statements of one
  transaction.

Both ranks are turned into a score from 0 to 1 as ``rank / (rank + 1)`` (PostgreSQL's
normalisation 32; for SQLite ``rank`` is ``-bm25``), so a higher score is a better match
and the same question gives comparable scores on either database.

The question words the search drops ("where", "who", "when", "how", "what … do") say
what kind of fact is asked for (citations.vocabulary ``question_intent``): each
predicate they point to gets an intent from 0 to 1. A fact's score is
``(1 - INTENT_WEIGHT) * text / best + INTENT_WEIGHT * intent``, where ``best`` is the
best text score among the facts shown for this question: the text counts by how
near it comes to the best match, which is the same on either database (bm25 and
``ts_rank_cd`` score on scales of their own, so an absolute text score would weigh the
intent differently on each). The subject's facts of the predicates asked for are a
second branch of the search statement (``UNION ALL``, on the fact table's index on
subject and predicate), so a fact the text does not match is found when its predicate
is asked for: "where is he from?", stop words only, finds ``from``.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection
from django.db.models import BooleanField, FloatField, Q, QuerySet
from django.db.models.expressions import RawSQL
from django.utils import timezone

from attest.prepared import PreparedQuery, listed, one_of
from citations.cursor import BadCursor, next_page, position_after
from citations.models import FactVersion, Project
from citations.selectors.fact_views import FactPage, FactView, bad_after, fact_view, iso_utc
from citations.vocabulary import question_intent

RANKED_DEFAULT_LIMIT = 20
RANKED_MAX_LIMIT = 100
# How much the question's intent counts beside the text: a fact of a fully asked-for
# predicate the text does not match scores as the best text match of a predicate not
# asked for.
INTENT_WEIGHT = 0.5

# Snowball's English stop words, the list PostgreSQL's 'english' configuration drops
# (tsearch_data/english.stop): SQLite's FTS5 has none, so the question loses the same.
_SNOWBALL_ENGLISH = """
i me my myself we our ours ourselves you your yours yourself yourselves he him his
himself she her hers herself it its itself they them their theirs themselves what
which who whom this that these those am is are was were be been being have has had
having do does did doing a an the and but if or because as until while of at by for
with about against between into through during before after above below to from up
down in out on off over under again further then once here there when where why how
all any both each few more most other some such no nor not only own same so than too
very s t can will just don should now
"""
ENGLISH_STOP_WORDS = frozenset(_SNOWBALL_ENGLISH.split())

# body (statement and value) weighs 1, the predicate's words 0.4: PostgreSQL's A and B.
_SQLITE_SCORES = """
SELECT search.fact_id, -bm25(citations_factsearch_fts, 1.0, 0.4)
FROM citations_factsearch_fts
JOIN citations_factsearch AS search ON search.id = citations_factsearch_fts.rowid
WHERE citations_factsearch_fts MATCH %(question)s
    AND search.subject_id = (SELECT id FROM citations_subject WHERE project_id = %(project)s
        AND external_id = %(subject)s AND erased_at IS NULL)
"""

_WORD = re.compile(r"\w+")


def fts5_question(query: str) -> str:
    """The FTS5 query for a question: its words less stop words, ORed (empty: no words)."""
    words = dict.fromkeys(w for w in _WORD.findall(query.lower()) if w not in ENGLISH_STOP_WORDS)
    return " OR ".join(f'"{word}"' for word in words)


# The subject's facts of the predicates the question asks for (its intent), scored 0 by
# the text: one more branch of the same statement, on the fact table's index on
# (subject, predicate, value_key).
_ASKED_FOR = """
SELECT fact.id, 0 FROM citations_fact AS fact
WHERE fact.subject_id = (SELECT id FROM citations_subject WHERE project_id = %(project)s
        AND external_id = %(subject)s AND erased_at IS NULL)
    AND fact.erased_at IS NULL AND fact.predicate IN ({predicates})
"""


def search_statement(
    query: str, predicates: Iterable[str] = (), *, project_pk: int, subject_id: str
) -> tuple[str, dict[str, Any]] | None:
    """SQLite's statement that finds the facts a question reaches, and its parameters: the
    text's matches with their rank, and the facts of ``predicates`` (rank 0); None when
    the question reaches nothing. (PostgreSQL finds them inside _found_versions' one
    statement.)"""
    params: dict[str, Any] = {"project": project_pk, "subject": subject_id}
    parts = []
    if question := fts5_question(query):
        parts.append(_SQLITE_SCORES)
        params["question"] = question
    names = sorted(predicates)
    if names:
        params |= {f"p{index}": name for index, name in enumerate(names)}
        listed = ", ".join(f"%(p{index})s" for index in range(len(names)))
        parts.append(_ASKED_FOR.format(predicates=listed))
    return ("UNION ALL".join(parts), params) if parts else None


def fact_scores(
    *, project_pk: int, subject_id: str, query: str, predicates: Iterable[str] = ()
) -> dict[uuid.UUID, float]:
    """On SQLite, each fact of the subject (by its client ID) that matches the question,
    with its score from 0 to 1, and each of its facts of ``predicates`` (0 unless the text
    matches it too); none for an unknown or erased subject."""
    statement = search_statement(query, predicates, project_pk=project_pk, subject_id=subject_id)
    if statement is None:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(*statement)
        rows = cursor.fetchall()
    scores: dict[uuid.UUID, float] = {}
    for fact_id, rank in rows:
        rank = max(float(rank), 0.0)
        key = uuid.UUID(fact_id)  # SQLite hands the UUID back as its 32 hex digits
        scores[key] = max(rank / (rank + 1), scores.get(key, 0.0))
    return scores


def _believed(
    versions: QuerySet[FactVersion],
    *,
    known_at: datetime,
    valid_at: datetime,
    predicate: str | None,
) -> QuerySet[FactVersion]:
    """``versions`` true at ``valid_at`` as believed at ``known_at`` (the database's filter,
    inclusive on both ends), of unerased facts, with their fact, subject and retraction."""
    versions = (
        versions.filter(fact__erased_at__isnull=True)
        .filter(known_from__lte=known_at, valid_from__lte=valid_at)
        .filter(Q(known_until__isnull=True) | Q(known_until__gt=known_at))
        .filter(Q(valid_until__isnull=True) | Q(valid_until__gte=valid_at))
        .select_related("fact", "fact__subject", "retraction")
    )
    return versions.filter(predicate=predicate) if predicate else versions


# SQLite: the versions of the facts the search found, their IDs in one parameter so the
# statement is compiled once (attest.prepared): compiling it each call was about 2.5 ms of
# a ranked recall's CPU, more than the search and the rows together.
def _ranked_versions(
    vendor: str,
    *,
    project: int,
    facts: str,
    known_at: datetime,
    valid_at: datetime,
    predicate: str | None = None,
) -> QuerySet[FactVersion]:
    """The versions of ``facts`` (see attest.prepared.listed) as _believed() gives them."""
    versions = FactVersion.objects.filter(project_id=project).filter(
        one_of(vendor, '"citations_factversion"."fact_id"', "uuid", facts)
    )
    return _believed(versions, known_at=known_at, valid_at=valid_at, predicate=predicate)


_RANKED_VERSIONS = PreparedQuery(
    _ranked_versions,
    project=int,
    facts=str,
    known_at=datetime,
    valid_at=datetime,
    predicate=str,
)

# PostgreSQL: the search and the versions in ONE statement, which sees one state by itself,
# so the read needs no transaction (citations.services.reads): the found facts are the
# statement's semi-join (the text's matches on the GIN index, the asked-for predicates on
# the fact table's index, both for the subject found once), and each version carries its
# fact's text rank, read from the fact's own search row (0 where the text does not match).
_PG_QUESTION = (
    "to_tsquery('simple', coalesce((SELECT string_agg(quote_literal(lexeme), ' | ') "
    "FROM unnest(to_tsvector('english', %s))), ''))"
)
_PG_SUBJECT = (
    "(SELECT id FROM citations_subject WHERE project_id = %s AND external_id = %s "
    "AND erased_at IS NULL)"
)
_PG_FOUND = f""""citations_factversion"."fact_id" IN (
    SELECT search.fact_id FROM citations_factsearch AS search
    WHERE search.subject_id = {_PG_SUBJECT} AND search.vector @@ {_PG_QUESTION}
    UNION ALL
    SELECT fact.id FROM citations_fact AS fact
    WHERE fact.subject_id = {_PG_SUBJECT} AND fact.erased_at IS NULL
        AND fact.predicate = ANY(%s::text[])
)"""
_PG_TEXT_RANK = f"""(SELECT ts_rank_cd(search.vector, {_PG_QUESTION}, 32)
    FROM citations_factsearch AS search
    WHERE search.fact_id = "citations_factversion"."fact_id")"""


def _found_versions(
    _shape: None,
    *,
    project: int,
    subject: str,
    question: str,
    predicates: str,
    known_at: datetime,
    valid_at: datetime,
    predicate: str | None = None,
) -> QuerySet[FactVersion]:
    """The subject's versions of the facts ``question`` reaches (its text, or a predicate
    of ``predicates``, a list as attest.prepared.listed makes it) as _believed() gives
    them, each with ``text_rank``: ``ts_rank_cd`` of its fact's search row."""
    found = RawSQL(
        _PG_FOUND,
        (project, subject, question, project, subject, predicates),
        output_field=BooleanField(),
    )
    versions = (
        FactVersion.objects.filter(project_id=project)
        .filter(found)
        .annotate(text_rank=RawSQL(_PG_TEXT_RANK, (question,), output_field=FloatField()))
    )
    return _believed(versions, known_at=known_at, valid_at=valid_at, predicate=predicate)


_FOUND_VERSIONS = PreparedQuery(
    _found_versions,
    project=int,
    subject=str,
    question=str,
    predicates=str,
    known_at=datetime,
    valid_at=datetime,
    predicate=str,
)


def _versions_and_scores(
    *,
    project: Project,
    subject_id: str,
    query: str,
    intent: dict[str, float],
    known_at: datetime,
    valid_at: datetime,
    predicate: str | None,
) -> tuple[list[FactVersion], dict[uuid.UUID, float]]:
    """The versions of the facts ``query`` reaches and each fact's text score (0 to 1)."""
    values: dict[str, Any] = {"known_at": known_at, "valid_at": valid_at}
    if predicate:
        values["predicate"] = predicate
    if connection.vendor == "postgresql":
        versions = _FOUND_VERSIONS.rows(
            None,
            project=project.pk,
            subject=subject_id,
            question=query,
            predicates=listed("postgresql", sorted(intent)),
            **values,
        )
        # ``text_rank`` is the queryset's annotation, which django-stubs cannot type.
        scores = {v.fact_id: max(float(v.text_rank or 0.0), 0.0) for v in versions}  # type: ignore[attr-defined]
        return versions, scores
    scores = fact_scores(
        project_pk=project.pk, subject_id=subject_id, query=query, predicates=intent
    )
    if not scores:
        return [], {}
    values["facts"] = listed(connection.vendor, scores)
    return _RANKED_VERSIONS.rows(connection.vendor, project=project.pk, **values), scores


@dataclass(frozen=True)
class RankedFact(FactView):
    """A fact as recall shows it, with how well it matches the question (0 to 1)."""

    score: float


def combined_score(text: float, best: float, intent: float) -> float:
    """A fact's score (0 to 1) from its text's, the question's best text score and its
    predicate's intent (0 to 1)."""
    relative = text / best if best > 0 else 0.0
    return (1 - INTENT_WEIGHT) * relative + INTENT_WEIGHT * intent


def _order(fact: RankedFact) -> tuple[float, str]:
    return (-fact.score, str(fact.id))


def ranked_facts(
    *,
    project: Project,
    subject_id: str,
    query: str,
    predicate: str | None = None,
    valid_at: datetime | None = None,
    known_at: datetime | None = None,
    limit: int = RANKED_DEFAULT_LIMIT,
    after: Any = None,
) -> FactPage:
    """The subject's facts matching ``query``, best first, true at ``valid_at`` as believed
    at ``known_at`` (both now by default, as in recalled_facts); pages by (score, ID)."""
    scope = "ranked:" + json.dumps(
        [subject_id, predicate, query, iso_utc(valid_at), iso_utc(known_at)]
    )
    try:
        position = position_after(after, scope=scope, shape=(float, str))
    except BadCursor:
        raise bad_after() from None
    as_of_known = known_at is not None
    known_at = known_at or timezone.now()
    valid_at = valid_at or known_at
    intent = question_intent(query)
    versions, scores = _versions_and_scores(
        project=project,
        subject_id=subject_id,
        query=query,
        intent=intent,
        known_at=known_at,
        valid_at=valid_at,
        predicate=predicate,
    )
    # The database filter is inclusive on both ends; the interval rules are exact.
    shown = [
        version
        for version in versions
        if version.valid_interval.contains(valid_at) and version.known_interval.contains(known_at)
    ]
    # The best text match among the facts shown, so a fact filtered out sets no scale.
    best = max((scores.get(version.fact_id, 0.0) for version in shown), default=0.0)
    ranked = []
    for version in shown:
        view = fact_view(version, known_at=known_at if as_of_known else None)
        ranked.append(
            RankedFact(
                view.fact,
                view.version,
                view.status,
                view.known,
                view.retraction,
                score=combined_score(
                    scores.get(version.fact_id, 0.0), best, intent.get(version.predicate, 0.0)
                ),
            )
        )
    ranked.sort(key=_order)
    if position is not None:
        last = (-position[0], position[1])
        ranked = [fact for fact in ranked if _order(fact) > last]
    if len(ranked) <= limit:
        return FactPage(list(ranked))
    page = ranked[:limit]
    return FactPage(list(page), next_page(scope=scope, position=[page[-1].score, str(page[-1].id)]))


__all__ = [
    "ENGLISH_STOP_WORDS",
    "INTENT_WEIGHT",
    "RANKED_DEFAULT_LIMIT",
    "RANKED_MAX_LIMIT",
    "RankedFact",
    "combined_score",
    "fact_scores",
    "fts5_question",
    "ranked_facts",
    "search_statement",
]
