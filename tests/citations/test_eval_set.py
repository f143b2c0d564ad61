"""The evaluation set (tests/citations/eval): kept apart from the rule corpus, and measured.

The extractor's figures quoted in README.md and bench/README.md are this measurement:
``python -m tests.citations.eval.measure``.
"""

from __future__ import annotations

from pathlib import Path

from citations.extract.predicates import BUILTIN_NAMES
from tests.citations.corpus.measure import compact_table
from tests.citations.corpus.measure import load as corpus_rows
from tests.citations.eval.measure import (
    HELD_OUT,
    THIRD,
    Item,
    all_texts,
    conversations,
    measure,
    sentences,
    table,
)

ROOT = Path(__file__).parents[2]
SCORE = measure()


def _normal(text: str) -> str:
    return " ".join(text.casefold().split())


def test_no_sentence_of_the_rule_corpus_is_in_the_evaluation_set():
    corpus = {_normal(row["text"]) for row in corpus_rows()}
    shared = [text for text in all_texts() if _normal(text) in corpus]
    assert shared == []


def test_the_overlap_check_would_catch_a_shared_sentence():
    corpus = {_normal(row["text"]) for row in corpus_rows()}
    assert _normal("  I live in   LISBON. ") in corpus or _normal("I live in Lisbon.") in corpus


def test_the_set_is_as_large_as_the_issue_asks():
    found = conversations()
    assert len(found) >= 10
    assert all(15 <= len(c["messages"]) <= 30 for c in found)
    assert sum(len(c["questions"]) for c in found) >= 80
    assert len(sentences()["sentences"]) >= 150
    for conversation in found:
        for question in conversation["questions"]:
            assert question["answer"]["predicate"] in BUILTIN_NAMES
            assert question["answer"]["value"]


def test_every_question_is_answered_by_a_fact_its_conversation_labels():
    for conversation in conversations():
        labelled = {tuple(f) for m in conversation["messages"] for f in m.get("facts", [])}
        for question in conversation["questions"]:
            answer = question["answer"]
            assert (answer["predicate"], answer["value"]) in labelled, question


def test_extractor_precision_is_at_least_098_and_recall_at_least_085():
    assert SCORE.precision() >= 0.98, "\n".join(SCORE.misses)
    assert SCORE.recall() >= 0.85, "\n".join(SCORE.misses)


def test_a_correction_takes_the_predicate_of_the_fact_it_corrects():
    at = conversations()[0]["messages"][0]["at"]
    from datetime import datetime

    when = datetime.fromisoformat(at)
    rows = [
        Item("I'm allergic to walnuts.", when, (("allergic_to", "walnuts"),), "x"),
        Item("Sorry, I meant cashews, not walnuts.", when, (("allergic_to", "cashews"),), "x"),
    ]
    score = measure(rows)
    assert (score.precision(), score.recall()) == (1.0, 1.0)
    # Alone, with nothing earlier to correct, the same message states nothing.
    alone = measure([Item("Sorry, I meant cashews, not walnuts.", when, (), "y")])
    assert alone.right.total() + alone.wrong.total() == 0


def test_bench_readme_has_the_current_table():
    text = (ROOT / "bench" / "README.md").read_text(encoding="utf-8")
    start = text.index("<!-- eval-table -->\n") + len("<!-- eval-table -->\n")
    assert text[start : text.index("\n<!-- /eval-table -->")] == table(SCORE), (
        "run python -m tests.citations.eval.measure"
    )


def test_the_readme_quotes_the_evaluation_figures():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"{SCORE.items} labelled messages" in readme
    assert f"precision is\n{SCORE.precision():.3f} and its recall {SCORE.recall():.3f}" in readme
    start = readme.index("<!-- eval-compact -->\n") + len("<!-- eval-compact -->\n")
    published = readme[start : readme.index("\n<!-- /eval-compact -->")]
    assert published == compact_table(SCORE)
    assert "precision is\n1.000 and its recall 0.969" not in readme


def test_the_held_out_set_is_apart_from_the_corpus_and_the_first_set_and_well_formed():
    held_out = conversations(HELD_OUT)
    seen = {_normal(row["text"]) for row in corpus_rows()} | {_normal(t) for t in all_texts()}
    texts = [m["text"] for c in held_out for m in c["messages"]]
    assert [text for text in texts if _normal(text) in seen] == []
    assert len(held_out) >= 6
    assert sum(len(c["questions"]) for c in held_out) >= 50
    first = {c["subject"] for c in conversations()}
    assert first.isdisjoint(c["subject"] for c in held_out)
    first_questions = {_normal(q["question"]) for c in conversations() for q in c["questions"]}
    for conversation in held_out:
        labelled = {tuple(f) for m in conversation["messages"] for f in m.get("facts", [])}
        for question in conversation["questions"]:
            assert _normal(question["question"]) not in first_questions, question
            answer = question["answer"]
            assert answer["predicate"] in BUILTIN_NAMES
            assert (answer["predicate"], answer["value"]) in labelled, question


def test_the_third_set_is_apart_from_the_corpus_and_the_other_sets_and_well_formed():
    third = conversations(THIRD)
    earlier = [*conversations(), *conversations(HELD_OUT)]
    seen = {_normal(row["text"]) for row in corpus_rows()} | {_normal(t) for t in all_texts()}
    seen |= {_normal(m["text"]) for c in conversations(HELD_OUT) for m in c["messages"]}
    texts = [m["text"] for c in third for m in c["messages"]]
    assert [text for text in texts if _normal(text) in seen] == []
    assert len(texts) == len({_normal(text) for text in texts})
    assert len(third) >= 6
    assert all(12 <= len(c["messages"]) <= 25 for c in third)
    assert sum(len(c["questions"]) for c in third) >= 40
    assert {c["subject"] for c in earlier}.isdisjoint(c["subject"] for c in third)
    asked = {_normal(q["question"]) for c in earlier for q in c["questions"]}
    for conversation in third:
        labelled = {tuple(f) for m in conversation["messages"] for f in m.get("facts", [])}
        # Distractors: questions, hedges, wishes, other people's facts, reported speech.
        assert sum(1 for m in conversation["messages"] if m.get("facts") == []) >= 3
        for question in conversation["questions"]:
            assert _normal(question["question"]) not in asked, question
            answer = question["answer"]
            assert answer["predicate"] in BUILTIN_NAMES
            assert (answer["predicate"], answer["value"]) in labelled, question
