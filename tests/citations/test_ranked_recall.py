"""POST /v1/recall with query: facts ranked by the database's full-text search."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from citations.extract.predicates import BUILTIN_NAMES
from citations.models import Fact, FactSearch
from citations.selectors.ranked import fts5_question
from citations.vocabulary import BUILTIN_SYNONYMS, builtin_vocabularies
from tests.citations.scan import columns_holding

pytestmark = pytest.mark.django_db

AT = "2026-03-04T10:00:00Z"


@pytest.fixture
def chatty(ledger):
    ledger.ingest(
        "u",
        ("m1", "I live in Berlin. I work at Acme Robotics.", "2026-01-04T10:00:00Z"),
        ("m2", "I'm allergic to peanuts. I have a dog named Rex.", "2026-02-04T10:00:00Z"),
        ("m3", "I moved to Munich in March.", AT),
    )
    return ledger


def test_a_question_in_plain_words_reaches_the_predicate(chatty):
    facts = chatty.ranked("u", query="where does she live now?")
    assert facts[0][:2] == ("lives_in", "Munich")
    # Berlin was superseded: current on both axes by default.
    assert ("lives_in", "Berlin") not in [f[:2] for f in facts]
    assert chatty.ranked("u", query="any allergies")[0][:2] == ("allergic_to", "peanuts")
    assert chatty.ranked("u", query="does he have pets?")[0][0] == "has_pet"
    assert chatty.ranked("u", query="Who is her employer?")[0][:2] == (
        "works_at",
        "Acme Robotics",
    )


def test_scores_are_between_0_and_1_highest_first(chatty):
    facts = chatty.ranked("u", query="dog peanuts allergy")
    scores = [score for _, _, score in facts]
    assert len(facts) == 2
    assert all(0 < score < 1 for score in scores)
    assert scores == sorted(scores, reverse=True)


def test_stemming_matches_other_forms_of_a_word(chatty):
    assert chatty.ranked("u", query="living")[0][:2] == ("lives_in", "Munich")
    assert chatty.ranked("u", query="robot")[0][:2] == ("works_at", "Acme Robotics")


def test_a_question_of_stop_words_only_finds_nothing(chatty):
    assert chatty.ranked("u", query="what is it?") == []


def test_as_of_and_predicate_still_apply(chatty):
    facts = chatty.ranked(
        "u", query="where does she live", as_of={"valid_at": "2026-02-01T00:00:00Z"}
    )
    assert [f[:2] for f in facts if f[0] == "lives_in"] == [("lives_in", "Berlin")]
    only = chatty.ranked("u", query="dog peanuts", predicate="has_pet")
    assert [f[0] for f in only] == ["has_pet"]


def test_without_query_the_order_is_as_before_and_carries_no_score(chatty):
    body = chatty.recall("u").json()
    assert [f["predicate"] for f in body["facts"]] == sorted(f["predicate"] for f in body["facts"])
    assert all("score" not in f for f in body["facts"])


def test_limit_defaults_to_20_and_is_at_most_100_with_query(ledger):
    ledger.ingest(
        "u",
        *[(f"m{i}", f"I like blue thing {i}.", AT) for i in range(25)],
    )
    response = ledger.recall("u", query="blue things")
    assert len(response.json()["facts"]) == 20
    page2 = ledger.recall("u", query="blue things", after=response.json()["next"])
    assert len(page2.json()["facts"]) == 5
    first = {f["id"] for f in response.json()["facts"]}
    assert first.isdisjoint(f["id"] for f in page2.json()["facts"])
    refused = ledger.recall("u", query="blue", limit=101)
    assert refused.status_code == 400
    assert refused.json()["error"]["details"]["field"] == "limit"
    # Without query the old range holds.
    assert ledger.recall("u", limit=150).status_code == 200


def test_a_declared_predicates_synonyms_are_searched(ledger):
    declared = ledger.client.post(
        "/v1/predicates",
        {
            "name": "prefers_seat",
            "cardinality": "one",
            "description": "Where the user sits when flying.",
            "synonyms": ["aisle or window", "airplane"],
        },
        format="json",
    )
    assert declared.status_code == 201, declared.content
    assert declared.json()["synonyms"] == ["aisle or window", "airplane"]
    ledger.ingest("u", ("m1", "I like tea. I prefer trains.", AT))
    authored = ledger.client.post(
        "/v1/facts",
        {
            "subject": "u",
            "predicate": "prefers_seat",
            "statement": "Seat 3C please.",
            "value": "3C",
            "authored_by": "support:ana",
        },
        format="json",
    )
    assert authored.status_code == 201, authored.content
    # Only the declared synonyms hold "airplane".
    assert [f[:2] for f in ledger.ranked("u", query="on the airplane?")] == [("prefers_seat", "3C")]


def test_every_builtin_predicate_has_synonyms_and_a_vocabulary():
    assert set(BUILTIN_SYNONYMS) == set(BUILTIN_NAMES)
    vocabularies = builtin_vocabularies()
    for name in BUILTIN_NAMES:
        assert all(word in vocabularies[name] for word in BUILTIN_SYNONYMS[name])


def test_the_index_row_carries_the_predicates_vocabulary(chatty):
    fact = Fact.objects.get(predicate="allergic_to")
    search = FactSearch.objects.get(fact=fact)
    assert search.vocabulary == builtin_vocabularies()["allergic_to"]
    assert "peanuts" in search.content


def _indexed_text() -> str:
    """Everything the full-text index itself holds (not the fact table)."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT coalesce(string_agg(vector::text, ' '), '') FROM citations_factsearch"
            )
        else:
            cursor.execute(
                "SELECT coalesce(group_concat(body || ' ' || vocabulary, ' '), '') "
                "FROM citations_factsearch_fts"
            )
        return cursor.fetchone()[0].lower()


def test_erasure_removes_the_indexed_text(chatty):
    assert "munich" in _indexed_text()
    erased = chatty.client.post("/v1/erasures", {"subject": "u"}, format="json")
    assert erased.status_code == 200, erased.content
    text = _indexed_text()
    for word in ("munich", "berlin", "peanut", "rex", "acm"):
        assert word not in text
    assert not FactSearch.objects.exists()
    # Nor in the index's own storage (FTS5's segment rows on SQLite).
    assert columns_holding("Munich", "peanuts") == []
    assert chatty.ranked("u", query="where does she live") == []


def test_erasing_a_message_removes_its_facts_text_only(chatty):
    erased = chatty.client.post("/v1/erasures", {"subject": "u", "message_id": "m2"}, format="json")
    assert erased.status_code == 200, erased.content
    text = _indexed_text()
    assert "peanut" not in text and "rex" not in text
    assert "munich" in text
    assert chatty.ranked("u", query="any allergies") == []


def test_a_correction_is_indexed_in_the_same_transaction(chatty):
    munich = chatty.recall("u", query="live").json()["facts"][0]
    retracted = chatty.client.post(
        f"/v1/facts/{munich['id']}/retract",
        {"reason": "typo", "replacement": {"statement": "I moved to Hamburg.", "value": "Hamburg"}},
        format="json",
    )
    assert retracted.status_code == 200, retracted.content
    assert chatty.ranked("u", query="where does she live")[0][:2] == ("lives_in", "Hamburg")


def test_another_projects_credential_ranks_nothing(chatty, other_ledger):
    assert other_ledger.ranked("u", query="where does she live") == []


@pytest.mark.parametrize(
    ("question", "fts5"),
    [
        ("where does she live now?", '"live"'),
        ("Any allergies?", '"allergies"'),
        ('say "hi" OR NOT', '"say" OR "hi"'),
        ("what is it", ""),
    ],
)
def test_the_sqlite_question_is_an_or_of_its_words_less_stop_words(question, fts5):
    assert fts5_question(question) == fts5


@pytest.mark.parametrize(
    "question",
    [
        "C:\\Users\\me\\file.txt",
        "it's a 'quoted' & | ! <-> (thing):*",
        "mail me at ana@example.com or https://example.com/a?b=c",
        "数据 東京 Zürich",
        '-munich OR "berlin" NOT',
        "   ???   ",
    ],
)
def test_any_question_is_searched_never_parsed_as_query_syntax(chatty, question):
    response = chatty.recall("u", query=question)
    assert response.status_code == 200, response.content
    assert all(0 < f["score"] < 1 for f in response.json()["facts"])


def test_a_word_of_the_question_finds_its_fact_whatever_surrounds_it(chatty):
    facts = chatty.ranked("u", query='-munich OR "berlin" NOT')
    assert facts[0][:2] == ("lives_in", "Munich")


def _versions_statement(ledger, query: str) -> tuple[str, int]:
    """The SQL of the read of the found facts' versions, and how many facts recall showed."""
    with CaptureQueriesContext(connection) as queries:
        shown = ledger.ranked("u", query=query)
    found = [q["sql"] for q in queries.captured_queries if "citations_factversion" in q["sql"]]
    assert len(found) == 1, found
    return found[0], len(shown)


def test_the_versions_are_read_by_one_statement_whatever_the_number_found(chatty):
    # The found facts' IDs go in one parameter: the text is the same for one fact and for
    # four, so it is compiled once (attest.prepared), and no count of IDs can pass the
    # database's limit on parameters.
    one, shown_one = _versions_statement(chatty, "dog")
    many, shown_many = _versions_statement(chatty, "dog peanuts Munich robotics")
    assert (shown_one, shown_many) == (1, 4)
    strip = re.compile(r"'[^']*'")  # the literal values differ, the statement does not
    assert strip.sub("?", one) == strip.sub("?", many)
