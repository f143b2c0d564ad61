"""Recall@3 of the answering fact over the evaluation set's questions (tests/citations/eval).

The harness ingests every conversation through the ingest service and asks each question
through the recall selector with ``query``. The figure is printed (``-s``); what is
asserted here is that the set reaches the ledger: the answering fact of nine questions in
ten is a current fact once its conversation is ingested (corrections and moves applied).
Ranked recall (issue 36 goal 1) turns the printed recall@3 into its own threshold.
"""

from __future__ import annotations

import pytest

from tests.citations.eval.measure import HELD_OUT
from tests.citations.eval.recall import ingest_all, recall_at_3
from tests.citations.factories import ProjectFactory

pytestmark = pytest.mark.django_db(transaction=False)


def test_the_answering_facts_are_current_after_ingest_and_recall_at_3_is_reported():
    project = ProjectFactory()
    ingest_all(project)
    score = recall_at_3(project)
    print(
        f"\nrecall@3 {score.recall_at_3():.3f} over {score.questions} questions; "
        f"answering fact current for {score.stored}"
    )
    assert score.questions >= 80
    print("\n".join(["answering fact not current:", *score.not_stored]))
    assert score.stored >= 0.9 * score.questions, "\n".join(score.not_stored)


def test_the_held_out_sets_recall_at_3_is_reported():
    project = ProjectFactory()
    ingest_all(project, HELD_OUT)
    score = recall_at_3(project, HELD_OUT)
    print(
        f"\nheld-out recall@3 {score.recall_at_3():.3f} over {score.questions} questions; "
        f"answering fact current for {score.stored}"
    )
    print("\n".join(["misses:", *score.misses, "answering fact not current:", *score.not_stored]))
    assert score.questions >= 50
