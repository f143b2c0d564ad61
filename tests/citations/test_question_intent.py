"""Ranked recall reads the question's words the full-text search drops (issue 36).

"where is he from?" is stop words only: the index sees nothing in it. Its question words
still say what is asked (a place, an origin), so recall ranks by them too
(citations.vocabulary ``question_intent``, citations.selectors.ranked).
"""

from __future__ import annotations

import pytest

from citations.extract.predicates import BUILTIN_NAMES
from citations.selectors.ranked import INTENT_WEIGHT, combined_score, fts5_question
from citations.vocabulary import QUESTION_INTENTS, question_intent

pytestmark = pytest.mark.django_db

AT = "2026-03-04T10:00:00Z"


@pytest.fixture
def olu(ledger):
    ledger.ingest(
        "olu",
        ("m1", "I'm from Lagos.", "2026-01-04T10:00:00Z"),
        ("m2", "I live in Oslo. I work at Ogilvy.", "2026-01-05T10:00:00Z"),
        ("m3", "I work as an illustrator.", "2026-01-06T10:00:00Z"),
        ("m4", "My birthday is on 2 April.", "2026-01-07T10:00:00Z"),
        ("m5", "I prefer short answers.", "2026-01-08T10:00:00Z"),
        ("m6", "My wife's name is Ingrid.", AT),
    )
    return ledger


def test_a_question_of_stop_words_only_is_answered_from_its_question_words(olu):
    assert fts5_question("where is he from?") == ""
    facts = olu.ranked("olu", query="where is he from?")
    assert facts[0][:2] == ("from", "Lagos")
    assert olu.ranked("olu", query="where is he?")[0][:2] == ("lives_in", "Oslo")
    assert olu.ranked("olu", query="when is it?")[0][:2] == ("birthday", "04-02")
    assert olu.ranked("olu", query="who is she?")[0][:2] == ("has_partner", "Ingrid")
    # Question words that ask for no kind of fact still find nothing.
    assert olu.ranked("olu", query="what is it?") == []


def test_what_someone_does_ranks_the_job_above_the_employer(olu):
    for question in ("what does he do?", "what work does he do?", "what does he do for work?"):
        facts = olu.ranked("olu", query=question)
        assert facts[0][:2] == ("job_title", "illustrator"), (question, facts)


def test_how_asks_for_a_preference_that_shares_no_word_with_it(olu):
    facts = olu.ranked("olu", query="how should replies be formatted?")
    assert facts[0][:2] == ("prefers", "short answers")


def test_a_word_the_fact_shares_still_outranks_a_question_word(olu):
    # "where" asks for a place, lives_in first; "work" names the employer.
    facts = olu.ranked("olu", query="where does he work?")
    assert facts[0][:2] == ("works_at", "Ogilvy")
    assert all(0 < score <= 1 for _, _, score in facts)
    assert [s for _, _, s in facts] == sorted((s for _, _, s in facts), reverse=True)


def test_as_of_and_predicate_still_apply_to_facts_found_by_intent(olu):
    before = olu.ranked(
        "olu", query="where is he from?", as_of={"valid_at": "2026-01-04T12:00:00Z"}
    )
    assert [f[:2] for f in before] == [("from", "Lagos")]
    only = olu.ranked("olu", query="where is he from?", predicate="lives_in")
    assert [f[:2] for f in only] == [("lives_in", "Oslo")]


def test_intent_reaches_only_the_asked_subject_of_the_callers_project(olu, other_ledger):
    other_ledger.ingest("olu", ("m1", "I'm from Accra.", AT))
    olu.ingest("someone-else", ("m1", "I'm from Kyiv.", AT))
    assert [f[:2] for f in other_ledger.ranked("olu", query="where is he from?")] == [
        ("from", "Accra")
    ]
    values = [f[1] for f in olu.ranked("olu", query="where is he from?")]
    assert "Accra" not in values and "Kyiv" not in values


def test_an_erased_subject_is_not_reached_by_intent(olu):
    erased = olu.client.post("/v1/erasures", {"subject": "olu"}, format="json")
    assert erased.status_code == 200, erased.content
    assert olu.ranked("olu", query="where is he from?") == []


@pytest.mark.parametrize(
    ("question", "first"),
    [
        ("Where is he from?", "from"),
        ("where's she from originally", "from"),
        ("where does she live", "lives_in"),
        ("where did he work before?", "worked_at"),
        ("when was she born?", "born_on"),
        ("how old is he", "born_on"),
        ("who is her partner?", "has_partner"),
        ("what does she do for a living?", "job_title"),
        ("how does he like his answers?", "prefers"),
    ],
)
def test_question_words_map_to_the_predicates_they_ask_for(question, first):
    intent = question_intent(question)
    assert intent[first] == max(intent.values()), intent


@pytest.mark.parametrize(
    "question", ["what is it?", "dog peanuts allergy", "", "what does she like to do?"]
)
def test_a_question_without_question_words_for_a_kind_of_fact_asks_for_none(question):
    assert question_intent(question) == {}


def test_every_intent_names_builtin_predicates_with_weights_from_0_to_1():
    for _, weights in QUESTION_INTENTS:
        assert set(weights) <= set(BUILTIN_NAMES)
        assert all(0 < weight <= 1 for weight in weights.values())


def test_the_score_weighs_the_text_by_the_best_match_and_adds_the_intent():
    assert combined_score(2.0, 2.0, 0.0) == pytest.approx(1 - INTENT_WEIGHT)
    assert combined_score(1.0, 2.0, 0.0) == pytest.approx((1 - INTENT_WEIGHT) / 2)
    assert combined_score(0.0, 0.0, 1.0) == pytest.approx(INTENT_WEIGHT)
    assert combined_score(0.3, 0.3, 1.0) == pytest.approx(1.0)
    # The scale of the database's own rank does not matter, only its ratio to the best.
    assert combined_score(0.1, 0.4, 0.5) == pytest.approx(combined_score(3.0, 12.0, 0.5))
