"""Recall@3 of the answering fact over the evaluation sets' questions (tests/citations/eval).

The harness ingests every conversation through the ingest service and asks each question
through the recall selector with ``query``; the figures are printed (``-s``) and held:

- the first set (conversations.json): recall@3 at least 0.9 (issue 36), and the answering
  fact current for nine questions in ten once its conversation is ingested;
- the held-out set (conversations_2.json, written before recall ranked by the question's
  intent and not tuned on): recall@3 at least 0.71, its figure once the extractor read
  everyday phrasing (40 of 56, the answering fact stored for 42; 33 of 56 and 34 when
  that ranking came), and the ranking finds at least nine in ten of the stored answers;
- the third set (conversations_3.json, everyday voices, written and measured before the
  rules for everyday phrasing were widened, and not tuned on): recall@3 within its
  figures with those rules (THIRD_HITS; the answering fact stored for 60; 34 hits and 35
  stored before them), and the ranking finds at least 85 in 100 of the stored answers.
  On SQLite two facts of one clause ("I speak Spanish and English") tie for third place,
  and the ranking breaks a tie by the facts' random ids, so one question is found in
  some runs and not others: the quote gives both counts.

README.md quotes the three figures; the tests fail when the quote is not the measurement.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from django.db import connection

from tests.citations.eval.measure import HELD_OUT, THIRD
from tests.citations.eval.recall import RecallScore, ingest_all, recall_at_3
from tests.citations.factories import ProjectFactory

pytestmark = pytest.mark.django_db(transaction=False)

README = Path(__file__).parents[2] / "README.md"
# The third set's hits as measured with the rules for everyday phrasing, by database.
THIRD_HITS = {"SQLite": (51, 52), "PostgreSQL": (53, 53)}


def _quoted(score: RecallScore) -> str:
    """The figure as README.md quotes it: "0.922 (83/90)"."""
    return f"{score.recall_at_3():.3f} ({score.hits}/{score.questions})"


def _report(name: str, score: RecallScore) -> str:
    print(
        f"\n{name} recall@3 {score.recall_at_3():.3f} ({score.hits}/{score.questions}); "
        f"answering fact current for {score.stored}"
    )
    print("\n".join(["answering fact not current:", *score.not_stored]))
    ranking = [miss for miss in score.misses if miss not in score.not_stored]
    print("\n".join(["stored but ranked below third:", *ranking]))
    return "\n".join(score.misses)


def test_recall_at_3_over_the_first_set_is_at_least_09():
    project = ProjectFactory()
    ingest_all(project)
    score = recall_at_3(project)
    misses = _report("first set", score)
    assert score.questions >= 80
    assert score.stored >= 0.9 * score.questions, "\n".join(score.not_stored)
    assert score.recall_at_3() >= 0.9, misses
    readme = " ".join(README.read_text(encoding="utf-8").split())
    assert f"answering fact is {_quoted(score)} over the evaluation set" in readme


def test_recall_at_3_over_the_held_out_set_holds_its_figure():
    project = ProjectFactory()
    ingest_all(project, HELD_OUT)
    score = recall_at_3(project, HELD_OUT)
    misses = _report("held-out set", score)
    assert score.questions >= 50
    assert score.hits >= 0.9 * score.stored, misses
    assert score.recall_at_3() >= 0.71, misses
    readme = " ".join(README.read_text(encoding="utf-8").split())
    assert f"and {_quoted(score)} on a second, held-out set" in readme
    assert f"answering fact for {score.stored} of the {score.questions} questions" in readme


def test_recall_at_3_over_the_third_set_holds_its_figure():
    project = ProjectFactory()
    ingest_all(project, THIRD)
    score = recall_at_3(project, THIRD)
    misses = _report("third set", score)
    assert score.questions >= 40
    assert score.hits >= 0.85 * score.stored, misses
    database = {"sqlite": "SQLite", "postgresql": "PostgreSQL"}[connection.vendor]
    low, high = THIRD_HITS[database]
    assert low <= score.hits <= high, misses
    readme = " ".join(README.read_text(encoding="utf-8").split())
    third = readme[readme.index("on a third set in everyday voices") :]
    if low == high:
        assert f"{_quoted(score)} on {database}" in third
    else:
        n = score.questions
        assert f"{low / n:.3f} or {high / n:.3f} ({low} or {high} of {n}) on {database}" in third
    assert f"answering fact for {score.stored} of its {score.questions} questions" in readme
