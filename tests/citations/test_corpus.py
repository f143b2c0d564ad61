"""The built-in extractor measured on the labelled corpus (tests/citations/corpus).

The table in docs/ledger.md is this measurement: ``python -m tests.citations.corpus.measure``.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest

from citations.extract.extractor import extract
from citations.extract.predicates import BUILTIN_NAMES, BUILTIN_PREDICATES
from tests.citations.corpus.measure import load, measure, table

ROWS = load()
SCORE = measure(ROWS)


def test_the_corpus_is_large_varied_and_mostly_first_person_statements_or_traps():
    assert len(ROWS) >= 500
    categories = Counter(row["category"] for row in ROWS)
    for category in ("question", "hedge", "negation", "reported", "other", "conditional"):
        assert categories[category] >= 10, category
    # A good share of negatives: messages with no fact to find.
    assert sum(not row["expected"] for row in ROWS) >= len(ROWS) * 0.4
    assert sum(any(ord(ch) > 127 for ch in row["text"]) for row in ROWS) >= 40
    labelled = Counter(predicate for row in ROWS for predicate, _ in row["expected"])
    assert set(labelled) <= set(BUILTIN_NAMES)
    for name in BUILTIN_NAMES:
        assert labelled[name] >= 3, name


def test_overall_precision_is_at_least_095_and_recall_is_reported():
    assert SCORE.precision() >= 0.95, "\n".join(SCORE.misses)
    assert "| **all** |" in table(SCORE)


@pytest.mark.parametrize("name", BUILTIN_NAMES)
def test_precision_per_predicate_is_at_least_095(name):
    wrong = [miss for miss in SCORE.misses if miss.startswith(f"wrong  {name}=")]
    assert SCORE.precision(name) >= 0.95, "\n".join(wrong)


def test_the_held_out_messages_also_reach_095():
    # Written after the rules were tuned on the rest of the corpus.
    held_out = measure([row for row in ROWS if row["set"] == "held_out"])
    assert held_out.messages >= 100
    assert held_out.precision() >= 0.95, "\n".join(held_out.misses)


@pytest.mark.parametrize("predicate", BUILTIN_PREDICATES, ids=lambda p: p.name)
def test_each_documented_example_gives_its_predicate(predicate):
    facts = extract(predicate.example, occurred_at=datetime(2026, 3, 4, tzinfo=UTC))
    assert facts and {fact.predicate for fact in facts} == {predicate.name}
    assert all(fact.cardinality == predicate.cardinality for fact in facts)


def test_a_wrong_fact_lowers_precision():
    # The measure itself can fail: a label the extractor does not produce counts as
    # missed, and a fact it produces without a label counts as wrong.
    score = measure(
        [{"text": "I live in Cork.", "expected": [["lives_in", "Dublin"]], "category": "x"}]
    )
    assert (score.precision("lives_in"), score.recall("lives_in")) == (0.0, 0.0)


def test_the_table_in_docs_ledger_md_is_the_current_measurement():
    doc = (Path(__file__).parents[2] / "docs" / "ledger.md").read_text(encoding="utf-8")
    start = doc.index("<!-- corpus-table -->\n") + len("<!-- corpus-table -->\n")
    published = doc[start : doc.index("\n<!-- /corpus-table -->")]
    assert published == table(SCORE), "run python -m tests.citations.corpus.measure"
