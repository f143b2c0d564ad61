"""Everyday phrasing (issue 36): contractions, "we", fronted phrases, fillers, corrections."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from citations.extract.extractor import correction_target, extract, read

SENT = datetime(2026, 3, 4, 10, 11, 58, tzinfo=UTC)


def facts(text: str) -> set[tuple[str, str]]:
    return {(f.predicate, f.value) for f in extract(text, occurred_at=SENT)}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("My name's Greta.", {("name", "Greta")}),
        ("I'm Joaquín, hi all.", {("name", "Joaquín")}),
        ("I go by Fen.", {("name", "Fen")}),
        ("We're based in Ghent.", {("lives_in", "Ghent")}),
        ("we moved to Bergen last month!", {("lives_in", "Bergen")}),
        ("I'm based in Quito.", {("lives_in", "Quito")}),
        ("we're in Turku now", {("lives_in", "Turku")}),
        ("Just started at Klarna this week.", {("works_at", "Klarna")}),
        ("I've been at Philips since 2017.", {("works_at", "Philips")}),
        ("I went vegan in January.", {("diet", "vegan")}),
        ("We're vegetarian, the whole family.", {("diet", "vegetarian")}),
        ("I can't stand reality TV.", {("dislikes", "reality TV")}),
        ("I cannot stand wet socks.", {("dislikes", "wet socks")}),
        ("I'm really into chess openings.", {("likes", "chess openings")}),
        ("I'm allergic to latex though.", {("allergic_to", "latex")}),
        ("We've got a ginger cat called Toast.", {("has_pet", "a ginger cat called Toast")}),
        ("we have two kids, both teenagers", {("has_child", "two kids")}),
        ("My husband is Oskar.", {("has_partner", "Oskar")}),
        (
            "I speak Finnish, Swedish and a little Estonian.",
            {("speaks", "Finnish"), ("speaks", "Swedish")},
        ),
        ("I was at Nokia for eight years.", {("worked_at", "Nokia")}),
        ("We lived in Perth for a while.", {("lived_in", "Perth")}),
        (
            "I used to live in Leipzig, but I've lived in Graz since 2015.",
            {("lived_in", "Leipzig"), ("lives_in", "Graz")},
        ),
        ("I love sea swimming, any spots near Brest?", {("likes", "sea swimming")}),
        ("My favourite drink's cortado.", {("favourite_drink", "cortado")}),
    ],
)
def test_everyday_phrasing_gives_the_fact(text, expected):
    assert facts(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "I'm in Vienna for the weekend.",
        "I'm German.",
        "I'm OK, thanks.",
        "My sister went vegan.",
        "Do we live in Ghent or Bruges?",
        "Maybe we moved to Bergen too early.",
        "If I went vegan, would I miss cheese?",
        'She said "we moved to Bergen" at dinner.',
        "I was at Nokia yesterday for a meeting.",
        "I love sea swimming?",
    ],
)
def test_still_no_fact_when_in_doubt(text):
    assert facts(text) == set()


def test_a_fronted_phrase_of_time_dates_the_fact_and_stays_in_the_quote():
    text = "🌿 Since 2019, I've lived in Tromsø."
    [fact] = extract(text, occurred_at=SENT)
    assert (fact.predicate, fact.value) == ("lives_in", "Tromsø")
    assert fact.quote == "Since 2019, I've lived in Tromsø"
    assert text.encode()[fact.byte_start : fact.byte_end] == fact.quote.encode()
    assert (fact.valid_from, fact.valid_precision) == (datetime(2019, 1, 1, tzinfo=UTC), "year")


def test_a_hedge_in_the_fronted_phrase_voids_the_clause():
    assert facts("In theory, I live in Tromsø.") == set()


def test_i_meant_x_not_y_is_a_correction_not_a_fact():
    text = "oops, I meant almonds, not hazelnuts"
    reading = read(text, occurred_at=SENT)
    assert reading.facts == []
    [correction] = reading.corrections
    assert (correction.predicate, correction.value, correction.mistaken) == (
        "",
        "almonds",
        "hazelnuts",
    )
    assert text.encode()[correction.byte_start : correction.byte_end] == text.encode()
    assert not correction.dated


def test_a_fact_then_not_y_is_a_correction_with_its_predicate():
    reading = read("Actually I work at Zeiss, not Leica.", occurred_at=SENT)
    [correction] = reading.corrections
    assert (correction.predicate, correction.value, correction.mistaken) == (
        "works_at",
        "Zeiss",
        "leica",
    )
    assert reading.facts == []


def test_actually_before_a_one_value_fact_corrects_the_latest_of_its_predicate():
    [correction] = read("Actually, I live in Aarhus.", occurred_at=SENT).corrections
    assert (correction.predicate, correction.mistaken) == ("lives_in", "")
    # For a many-valued predicate "actually" alone says nothing about which fact was wrong.
    reading = read("Actually, I like opera.", occurred_at=SENT)
    assert reading.corrections == []
    assert {(f.predicate, f.value) for f in reading.facts} == {("likes", "opera")}


def test_actually_after_a_value_is_no_correction():
    reading = read("I'm originally from Bruges actually.", occurred_at=SENT)
    assert reading.corrections == []
    assert {(f.predicate, f.value) for f in reading.facts} == {("from", "Bruges")}


def test_the_correction_target_is_the_newest_fact_with_the_wrong_value():
    [named] = read("I meant almonds, not hazelnuts.", occurred_at=SENT).corrections
    believed = [("allergic_to", "hazelnuts"), ("likes", "hazelnuts"), ("lives_in", "oslo")]
    assert correction_target(named, believed) == 1
    assert correction_target(named, [("lives_in", "oslo")]) is None
    [typed] = read("Actually, I live in Aarhus.", occurred_at=SENT).corrections
    assert correction_target(typed, [("lives_in", "oslo"), ("likes", "tea")]) == 0
    # Already believed: nothing to correct.
    assert correction_target(typed, [("lives_in", "aarhus")]) is None
    [unnamed] = read("Sorry, make that mustard.", occurred_at=SENT).corrections
    assert correction_target(unnamed, [("lives_in", "oslo"), ("favourite_colour", "teal")]) == 1


@pytest.mark.parametrize(
    "text", ["I meant maybe almonds, not hazelnuts.", "Did I mean almonds, not hazelnuts?"]
)
def test_a_doubtful_or_questioning_correction_is_none(text):
    assert read(text, occurred_at=SENT).corrections == []


def test_a_pattern_that_opens_with_a_phrase_of_time_is_read_whole_first():
    assert facts("In my spare time I carve spoons.") == {("hobby", "carve spoons")}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # The subject left out, as chat leaves it.
        ("living in Porto these days", {("lives_in", "Porto")}),
        ("work for Siemens, mostly on trains", {("works_at", "Siemens")}),
        ("used to live in Hull", {("lived_in", "Hull")}),
        ("mainly code in Haskell", {("uses_language", "Haskell")}),
        ("allergic to sesame", {("allergic_to", "sesame")}),
        ("been vegan since uni", {("diet", "vegan")}),
        ("fave sport is handball", {("favourite_sport", "handball")}),
        # Adverbs of time or place before the subject.
        ("Nowadays I live in Tartu.", {("lives_in", "Tartu")}),
        ("Originally I'm from Cádiz.", {("from", "Cádiz")}),
        # An introduction and what follows it.
        ("im oskar, civil engineer", {("name", "oskar"), ("job_title", "civil engineer")}),
        ("I love your answer", set()),
        ("I'm Ada, a data scientist", {("name", "Ada"), ("job_title", "data scientist")}),
        ("I'm Idris, 41, work at Unilever", {("name", "Idris"), ("works_at", "Unilever")}),
        ("I'm Kit, she/her pronouns", {("name", "Kit"), ("pronouns", "she/her")}),
        # A fact stated alongside another.
        (
            "I work for Bosch as a mechanical engineer.",
            {("works_at", "Bosch"), ("job_title", "mechanical engineer")},
        ),
        (
            "I live in Derry with my husband Conor.",
            {("lives_in", "Derry"), ("has_partner", "Conor")},
        ),
        ("just landed a job at Deloitte", {("works_at", "Deloitte")}),
        # Lists.
        (
            "I love kayaking, chess and old films",
            {("likes", x) for x in ("kayaking", "chess", "old films")},
        ),
        ("I speak Welsh as well as English.", {("speaks", "Welsh"), ("speaks", "English")}),
        (
            "My hobbies are baking and pottery, both messy",
            {("hobby", "baking"), ("hobby", "pottery")},
        ),
        ("I mostly write Go, some Perl for glue", {("uses_language", "Go")}),
        # Another subject's clause carries its own doubt.
        ("My wife Ines is a vet, she might open a clinic.", {("has_partner", "Ines")}),
        ("I'm allergic to kiwi but that's not a problem here", {("allergic_to", "kiwi")}),
        (
            "My eyesight is poor, I use a screen magnifier now",
            {("accessibility_need", "screen magnifier")},
        ),
        ("I've used Debian for years", {("uses_tool", "Debian")}),
    ],
)
def test_terse_and_listed_everyday_phrasing_gives_the_facts(text, expected):
    assert facts(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "im tired, long day",  # a lower-case word after "im" is a name only before a job
        "same here",
        "Still here: more questions",
        "Engineer here.",
        "love the idea, thanks",
        "I live in Leeds, they say.",
        "Actually, I think I use Vim.",
        "I use Ruby, I guess.",
        "like I said, it broke",
        "hate to ask but can you help",
        "write python for me",
        "dislike button is broken",
        "moved to the next chapter",
        "work at home today",
        "I don't like coffee.",
    ],
)
def test_terse_phrasing_still_gives_no_fact_when_in_doubt(text):
    found = facts(text)
    assert all(
        p not in {"name", "lives_in", "uses_language", "uses_tool", "dislikes"} for p, _ in found
    ), found
    assert ("likes", "the idea") not in found
