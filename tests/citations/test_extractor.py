"""The extractor: which statements become facts, their dates, and exact byte offsets."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from citations.extract.extractor import CARDINALITY, EXTRACTOR_VERSION, extract

SENT = datetime(2026, 3, 4, 10, 11, 58, tzinfo=UTC)


def only(text: str, at: datetime = SENT):
    facts = extract(text, occurred_at=at)
    assert len(facts) == 1, facts
    return facts[0]


def test_seed_example_is_lives_in_from_the_first_of_march():
    fact = only("I moved to Dublin in March. Still settling in.")
    assert fact.predicate == "lives_in"
    assert fact.value == "Dublin"
    assert fact.valid_from == datetime(2026, 3, 1, tzinfo=UTC)
    assert fact.valid_precision == "month"
    assert fact.quote == "I moved to Dublin in March"
    assert (fact.byte_start, fact.byte_end) == (0, 26)
    assert fact.statement == "I moved to Dublin in March."


def test_offsets_are_utf8_bytes_after_multibyte_text():
    text = "Grüße aus 東京! 🙂 I work at Ærø Shipping now."
    fact = only(text)
    raw = text.encode("utf-8")
    assert raw[fact.byte_start : fact.byte_end].decode("utf-8") == fact.quote
    assert fact.quote == "I work at Ærø Shipping now"
    # Byte offsets, not code points: the prefix has multibyte characters.
    assert fact.byte_start > text.index("I work")
    assert fact.value == "Ærø Shipping"


@pytest.mark.parametrize(
    "text",
    [
        "Do I live in Dublin?",
        "I live in Dublin?",
        "Maybe I live in Dublin.",
        "I think I moved to Dublin in March.",
        "I might move to Dublin.",
        "I live in Dublin, probably.",
        "I don't live in Dublin.",
        "I do not work at Acme.",
        "I never lived in Paris.",
        "I no longer work at Acme.",
        "You live in Dublin.",
        "She works at Acme.",
        "My friend moved to Rome in May.",
        "I will move to Oslo.",
        "I moved to Oslo in 2031.",
        "I live there.",
        "I'm not sure, but I live in Dublin.",
        "Maybe; I work at Acme.",
    ],
)
def test_questions_hedges_negations_and_third_persons_yield_nothing(text):
    assert extract(text, occurred_at=SENT) == []


@pytest.mark.parametrize(
    ("text", "predicate", "value"),
    [
        ("I live in Galway.", "lives_in", "Galway"),
        ("I'm living in Cork these days.", "lives_in", "Cork"),
        ("I work at Acme Corp.", "works_at", "Acme Corp"),
        ("I joined Globex.", "works_at", "Globex"),
        ("My name is Ada Lovelace.", "name", "Ada Lovelace"),
        ("Call me Sam.", "name", "Sam"),
        ("I love hiking in the mountains.", "likes", "hiking in the mountains"),
        ("I hate mornings.", "dislikes", "mornings"),
        ("I have a dog named Rex.", "has_pet", "a dog named Rex"),
        ("I was born on 3 March 1990.", "born_on", "1990-03-03"),
        ("I was born in 1985.", "born_on", "1985"),
        ("My birthday is the 29th of February.", "birthday", "02-29"),
        ("I'm allergic to penicillin.", "allergic_to", "penicillin"),
        ("I speak Irish.", "speaks", "Irish"),
    ],
)
def test_each_documented_predicate_is_found(text, predicate, value):
    fact = only(text)
    assert (fact.predicate, fact.value) == (predicate, value)
    assert fact.cardinality == CARDINALITY[predicate]


def test_functional_and_multi_valued_predicates_have_their_cardinality():
    assert {p for p, c in CARDINALITY.items() if c == "one"} >= {"lives_in", "works_at", "name"}
    assert {p for p, c in CARDINALITY.items() if c == "many"} >= {
        "likes",
        "dislikes",
        "has_pet",
        "allergic_to",
        "speaks",
    }


def test_lists_become_one_fact_per_item_with_the_same_quote():
    facts = extract("I speak French, German and Irish.", occurred_at=SENT)
    assert [f.value for f in facts] == ["French", "German", "Irish"]
    assert len({(f.byte_start, f.byte_end) for f in facts}) == 1


def test_two_clauses_in_one_sentence_give_two_quotes():
    text = "I moved to Cork in May, and I work at Acme."
    facts = extract(text, occurred_at=SENT)
    assert [f.predicate for f in facts] == ["lives_in", "works_at"]
    assert [f.quote for f in facts] == ["I moved to Cork in May", "I work at Acme"]
    for fact in facts:
        assert text.encode()[fact.byte_start : fact.byte_end].decode() == fact.quote


@pytest.mark.parametrize(
    ("phrase", "expected", "precision"),
    [
        ("in March", datetime(2026, 3, 1, tzinfo=UTC), "month"),
        # A month later in the year than the message is last year's.
        ("in November", datetime(2025, 11, 1, tzinfo=UTC), "month"),
        ("since 2019", datetime(2019, 1, 1, tzinfo=UTC), "year"),
        ("in June 2024", datetime(2024, 6, 1, tzinfo=UTC), "month"),
        ("on 2025-12-24", datetime(2025, 12, 24, tzinfo=UTC), "day"),
        ("yesterday", datetime(2026, 3, 3, tzinfo=UTC), "day"),
        ("last week", datetime(2026, 2, 23, tzinfo=UTC), "week"),
        ("last month", datetime(2026, 2, 1, tzinfo=UTC), "month"),
        ("last year", datetime(2025, 1, 1, tzinfo=UTC), "year"),
        ("two years ago", datetime(2024, 1, 1, tzinfo=UTC), "year"),
        ("3 days ago", datetime(2026, 3, 1, tzinfo=UTC), "day"),
        ("a month ago", datetime(2026, 2, 1, tzinfo=UTC), "month"),
    ],
)
def test_relative_dates_resolve_against_message_time_with_precision(phrase, expected, precision):
    fact = only(f"I moved to Lisbon {phrase}.")
    assert fact.value == "Lisbon"
    assert (fact.valid_from, fact.valid_precision) == (expected, precision)


def test_no_date_means_valid_from_the_message_time():
    fact = only("I live in Galway.")
    assert (fact.valid_from, fact.valid_precision) == (SENT, "instant")


@given(st.datetimes(min_value=datetime(2001, 1, 1), max_value=datetime(2099, 12, 31)))
def test_resolved_dates_are_never_after_the_message(naive):
    sent = naive.replace(tzinfo=UTC)
    for phrase in ["in March", "in December", "yesterday", "last week", "two years ago"]:
        for fact in extract(f"I moved to Oslo {phrase}.", occurred_at=sent):
            assert fact.valid_from <= sent


def test_version_names_the_rules_hash():
    assert re.fullmatch(r"extract/v3:[0-9a-f]{12}", EXTRACTOR_VERSION)


def test_extraction_is_deterministic():
    text = "I moved to Dublin in March. I like tea, and I have two cats."
    assert extract(text, occurred_at=SENT) == extract(text, occurred_at=SENT)


@pytest.mark.parametrize(
    "text",
    [
        "I moved to Paris 3 days ago.",
        "I moved to Paris yesterday.",
        "I moved to Paris last week.",
        "I moved to Paris two years ago.",
        "I moved to Paris in March.",
    ],
)
def test_a_relative_date_before_year_one_yields_no_fact(text):
    # The API accepts any ISO timestamp, so a message can be dated 0001-01-01.
    assert extract(text, occurred_at=datetime(1, 1, 1, 10, tzinfo=UTC)) == []


def test_a_message_of_very_many_clauses_is_read_in_one_pass():
    # 300,000 clauses in one sentence: rescanning the sentence for doubt before each
    # clause took hours (and 120 s made pytest-timeout fail this test).
    text = "x;" * 300_000 + "I live in Cork."
    fact = only(text)
    assert fact.value == "Cork"
    assert text.encode("utf-8")[fact.byte_start : fact.byte_end] == b"I live in Cork"


@pytest.mark.parametrize(
    "text",
    [
        "I'm not sure; x; y; z; I live in Cork.",
        "Maybe; " + "x; " * 50 + "I live in Cork.",
        "x; y; nothing; I live in Cork.",
    ],
)
def test_doubt_several_clauses_back_in_the_sentence_still_voids_a_fact(text):
    assert extract(text, occurred_at=SENT) == []


def test_doubt_in_an_earlier_sentence_does_not_void_a_later_one():
    facts = extract(
        "I'm not sure. x; y; I live in Cork. Ünïcödé; I work at Acme.", occurred_at=SENT
    )
    assert [(f.predicate, f.value) for f in facts] == [("lives_in", "Cork"), ("works_at", "Acme")]
    raw = "I'm not sure. x; y; I live in Cork. Ünïcödé; I work at Acme.".encode()
    assert [raw[f.byte_start : f.byte_end].decode() for f in facts] == [
        "I live in Cork",
        "I work at Acme",
    ]


@pytest.mark.parametrize(
    "text",
    [
        "I moved to Rome next week.",
        "I moved to Rome tomorrow.",
        "I move to Rome in two weeks.",
        "I start at Acme next Monday.",
        "I joined Acme in 3 days.",
        "I'm moving to Rome soon.",
        "I live in Rome from next month.",
    ],
)
def test_time_still_to_come_yields_nothing_rather_than_a_fact_from_now(text):
    assert extract(text, occurred_at=SENT) == []


@pytest.mark.parametrize(
    "text",
    ["I live in Rome I think.", "I work at Acme probably.", "I live in Cork maybe."],
)
def test_a_hedge_after_the_value_yields_nothing(text):
    assert extract(text, occurred_at=SENT) == []


def test_a_name_may_be_a_hedge_word():
    assert only("My name is Will.").value == "Will"


@pytest.mark.parametrize(
    "text",
    [
        '"I live in Rome," he said.',
        "\u201cI work at Acme,\u201d she told me.",
        'My brother wrote: "I moved to Oslo in March."',
    ],
)
def test_reported_speech_in_quotation_marks_yields_nothing(text):
    assert extract(text, occurred_at=SENT) == []


def test_quotation_marks_around_a_value_or_before_the_clause_are_no_speech():
    text = '\u201cI live in Rome,\u201d she said; I work at Acme. I like "Star Wars".'
    facts = extract(text, occurred_at=SENT)
    assert [(f.predicate, f.value) for f in facts] == [
        ("works_at", "Acme"),
        ("likes", "Star Wars"),
    ]


def test_dates_are_read_on_the_senders_calendar():
    helsinki = timezone(timedelta(hours=2))
    # Just after midnight on 1 March in Helsinki: still February in UTC.
    fact = only("I moved to Rome in March.", datetime(2026, 3, 1, 1, 0, tzinfo=helsinki))
    assert fact.valid_from == datetime(2026, 3, 1, tzinfo=helsinki)
    assert fact.valid_precision == "month"
    karachi = timezone(timedelta(hours=5))
    fact = only("I moved to Rome yesterday.", datetime(2026, 3, 4, 0, 30, tzinfo=karachi))
    assert fact.valid_from == datetime(2026, 3, 3, tzinfo=karachi)


def test_a_place_lived_in_before_is_lived_in_not_lives_in():
    # v2 gave nothing for "used to"; v3 keeps it as a former place, which never
    # supersedes the current lives_in.
    fact = only("I used to live in Cork.")
    assert (fact.predicate, fact.value, fact.cardinality) == ("lived_in", "Cork", "many")
    assert only("I used to work at IBM.").predicate == "worked_at"


@pytest.mark.parametrize(
    ("text", "facts"),
    [
        (
            "I prefer dark mode and my favourite colour is green. I use Python at work.",
            [("prefers", "dark mode"), ("favourite_colour", "green"), ("uses_language", "Python")],
        ),
        ("I'm a senior software engineer at Monzo.", [("job_title", "senior software engineer")]),
        ("I use Neovim and tmux.", [("uses_tool", "Neovim"), ("uses_tool", "tmux")]),
        ("I was born in Kraków in 1991.", [("born_in", "Kraków")]),
        (
            "I'm deaf, so I need captions.",
            [("accessibility_need", "deaf"), ("accessibility_need", "captions")],
        ),
        ("I can't stand loud music.", [("dislikes", "loud music")]),
        ("Blue is my favourite colour.", [("favourite_colour", "Blue")]),
        ("I have two older brothers.", [("has_sibling", "two older brothers")]),
        ("My wife's name is Åsa.", [("has_partner", "Åsa")]),
        ("I'm on a low-FODMAP diet.", [("diet", "low-FODMAP")]),
        ("我住在上海。 I live in Shanghai.", [("lives_in", "Shanghai")]),
    ],
)
def test_v3_reads_the_wider_predicates(text, facts):
    found = extract(text, occurred_at=SENT)
    assert [(f.predicate, f.value) for f in found] == facts
    raw = text.encode("utf-8")
    for fact in found:
        assert raw[fact.byte_start : fact.byte_end].decode("utf-8") == fact.quote


@pytest.mark.parametrize(
    "text",
    [
        "My sister lives in Paris.",
        "My friend said she lives in Rome.",
        "I'd love to live in Rome.",
        "I wish I lived in Barcelona.",
        "If I lived in Rome, I would eat pasta every day.",
        "My husband works at Siemens.",
        "I work with Sarah.",
        "I use my phone for everything.",
        "I'm from the future.",
        "My job is stressful.",
        "I speak from experience.",
        "I speak a little Japanese.",
        "My name is not Robert.",
        "I love you guys!",
        "I'm called away a lot.",
        "I think I have ADHD.",
        "Blue is my sister's favourite colour.",
        "I'm going to work at Stripe.",
        "I don't have a peanut allergy.",
    ],
)
def test_v3_still_gives_nothing_for_other_people_wishes_and_doubt(text):
    assert extract(text, occurred_at=SENT) == []


def test_emoji_after_a_clause_is_not_part_of_the_quote():
    text = "\U0001f30d My time zone is Asia/Kolkata \U0001f30f"
    fact = only(text)
    assert (fact.value, fact.quote) == ("Asia/Kolkata", "My time zone is Asia/Kolkata")
    assert text.encode("utf-8")[fact.byte_start : fact.byte_end] == fact.quote.encode()
