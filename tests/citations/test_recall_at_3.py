"""The recall@3 harness (tests/citations/recall_at_3.py) on a small conversation of its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.citations.recall_at_3 import ask, load, recall_at_3

pytestmark = pytest.mark.django_db

SAMPLE = Path(__file__).with_name("recall_sample.json")


def test_every_question_of_the_sample_is_answered_in_the_top_three(ledger):
    result = recall_at_3(ledger.client, load(SAMPLE))
    assert result.questions == 4
    assert result.misses == []
    assert result.score == 1.0 and (result.held, result.ranking_score) == (4, 1.0)


def test_a_question_whose_answer_is_not_held_is_a_miss(ledger):
    conversations = load(SAMPLE)
    recall_at_3(ledger.client, conversations)
    conversations[0]["questions"] = [
        {
            "question": "Where does she live now?",
            "answer": {"predicate": "lives_in", "value": "Leeds"},
        }
    ]
    result = ask(ledger.client, conversations)
    assert (result.questions, result.hits, result.held) == (1, 0, 0)
    assert result.misses[0]["top"][0][:2] == ("lives_in", "York")
