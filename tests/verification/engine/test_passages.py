"""Passages (lexical-v2): every rule of the published passages section."""

from __future__ import annotations

import math
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attest_core.normalise import normalise
from attest_core.passages import (
    _CJK_RE,
    _CUT_WORD_RE,
    _SENTENCE_END_RE,
    SCORER,
    ClaimHasNoWords,
    _claim_hits,
    _ends_sentence,
    _read_claim,
    _tokens,
    find_passages,
    split_units,
)
from tests.verification.engine.demo import DEMO_PAGE

DEMO_CLAIM = "The agency reported a 12 percent drop in emissions during 2025"


def _units(text: str) -> list[str]:
    return [text[a:b] for a, b in split_units(text)]


# The published example


def test_demo_page_gives_the_published_passages_missing_words_and_flags() -> None:
    result = find_passages(DEMO_PAGE, DEMO_CLAIM)
    assert result.match == "passages"
    assert result.scorer == SCORER == "lexical-v2"
    assert [(p.start, p.end) for p in result.passages] == [(115, 271), (357, 513), (0, 114)]
    assert [p.missing for p in result.passages] == [
        ["drop"],
        ["12", "drop", "emissions", "2025"],
        ["agency", "12", "percent", "drop", "emissions"],
    ]
    assert [p.flags for p in result.passages] == [
        ["negation_mismatch"],
        ["number_mismatch"],
        [],
    ]
    # The published scores: this page has six units and the documented weights.
    assert [p.score for p in result.passages] == [0.583, 0.217, 0.136]
    best = result.passages[0]
    assert (result.score, result.start, result.end) == (best.score, best.start, best.end)
    assert result.occurrences == 3
    assert best.text == DEMO_PAGE[115:271]
    assert "the agency said that emissions fell 12 %" in result.context
    assert "not a verdict" in result.note


def test_same_page_and_claim_give_the_same_answer() -> None:
    assert find_passages(DEMO_PAGE, DEMO_CLAIM) == find_passages(DEMO_PAGE, DEMO_CLAIM)


# Sentence rules


@pytest.mark.parametrize(
    ("text", "units"),
    [
        ("One ends. Two ends! Three ends? Four", ["One ends.", "Two ends!", "Three ends?", "Four"]),
        ("Use tools, e.g. a hammer. Next one.", ["Use tools, e.g. a hammer.", "Next one."]),
        ("That is, i.e. this. Next.", ["That is, i.e. this.", "Next."]),
        ("Dr. Jones came. Mr. Lee left.", ["Dr. Jones came.", "Mr. Lee left."]),
        ("Mrs. Brown and Prof. Chen met.", ["Mrs. Brown and Prof. Chen met."]),
        ("We met J. Smith today. Then left.", ["We met J. Smith today.", "Then left."]),
        ("Based in the U.S. since 1990. Yes.", ["Based in the U.S. since 1990.", "Yes."]),
        ("Apples, pears, etc. Then lunch.", ["Apples, pears, etc.", "Then lunch."]),
        ("Apples, pears, etc. and lunch.", ["Apples, pears, etc. and lunch."]),
        ("Version 12.5 shipped. Done.", ["Version 12.5 shipped.", "Done."]),
        ("Wait... what? Fine.", ["Wait...", "what?", "Fine."]),
        ('He said "stop." Then went.', ['He said "stop."', "Then went."]),
        ("东京很大。大阪也很大。", ["东京很大。", "大阪也很大。"]),
        ("本当\uff1fはい\uff01そうです", ["本当?", "はい!", "そうです"]),  # NFKC: to ASCII
    ],
)
def test_sentences_end_where_the_rules_say(text: str, units: list[str]) -> None:
    assert _units(normalise(text).text) == units


def test_full_width_cjk_marks_still_end_sentences_after_normalisation() -> None:
    text = normalise("本当\uff1fはい\uff01そうです").text
    assert "?" in text and "!" in text  # NFKC made them ASCII
    assert len(split_units(text)) == 3


def test_text_without_sentence_ends_is_cut_every_40_words() -> None:
    text = " ".join(f"w{i}" for i in range(100))
    units = _units(text)
    assert [len(u.split()) for u in units] == [40, 40, 20]
    assert units[1].startswith("w40 ")


def test_cjk_text_without_ends_is_cut_every_40_characters() -> None:
    text = "漢" * 100
    assert [len(u) for u in _units(text)] == [40, 40, 20]


def test_a_long_sentence_is_one_unit_and_only_text_after_the_last_end_is_cut() -> None:
    sentence = " ".join(f"w{i}" for i in range(61)) + " end."  # 62 words
    tail = " ".join(f"t{i}" for i in range(50))
    assert _units(sentence) == [sentence]
    assert _units(f"Short one. {sentence} {tail}") == [
        "Short one.",
        sentence,
        " ".join(f"t{i}" for i in range(40)),
        " ".join(f"t{i}" for i in range(40, 50)),
    ]
    assert _units("漢" * 100 + "。") == ["漢" * 100 + "。"]


def test_a_62_word_sentence_is_one_passage_with_the_sentence_offsets() -> None:
    sentence = (
        "The agency reported that emissions from the largest power stations in the northern "
        "region fell by twelve percent during the long and unusually warm winter of the year "
        "after the new rules took effect, while the smaller plants in the southern valleys "
        "kept burning coal at the same rate because their owners were granted an "
        "exemption to the end of the decade."
    )
    assert len(sentence.split()) == 62
    text = normalise(f"Background first. {sentence} Nothing else here.").text
    # Every claim word is in the first 40 words: cut there, a shorter piece would win.
    answer = find_passages(text, "agency reported emissions fell twelve percent")
    best = answer.passages[0]
    assert text[best.start : best.end] == sentence


# Words


def test_stemming_lets_reported_meet_report() -> None:
    result = find_passages("The annual report is out.", "The agency reported results")
    assert result.passages[0].missing == ["agency", "results"]


def test_common_words_are_ignored() -> None:
    result = find_passages("It was the end of the day.", "It was the start")
    assert result.match == "none"
    assert result.passages == []
    assert (result.score, result.start, result.end, result.context) == (None, None, None, None)
    assert result.occurrences == 0


def test_percent_sign_counts_as_the_word_percent() -> None:
    claim = "a 12 percent drop"
    assert find_passages("Sales fell 12 % this year.", claim).passages[0].missing == ["drop"]
    assert find_passages("Sales fell 12% this year.", claim).passages[0].missing == ["drop"]
    assert find_passages("A drop of 12 percent.", "a 12% drop").passages[0].missing == []


def test_each_cjk_character_is_a_word() -> None:
    page = "今日は東京に行きました。明日は大阪です。"
    result = find_passages(page, "東京")
    assert result.passages[0].text == "今日は東京に行きました。"
    assert result.passages[0].missing == []
    assert len(result.passages) == 1


@pytest.mark.parametrize("written", ["12 %", "12 percent", "12.0", "12.00"])
def test_number_equivalences_for_twelve(written: str) -> None:
    page = f"Output grew {written} in March."
    passage = find_passages(page, "output grew 12 percent").passages[0]
    assert "12" not in passage.missing
    assert "number_mismatch" not in passage.flags


@pytest.mark.parametrize(("page", "claim"), [("1,000", "1000"), ("1000", "1,000")])
def test_thousands_separators_do_not_change_a_number(page: str, claim: str) -> None:
    passage = find_passages(f"They hired {page} staff.", f"hired {claim} staff").passages[0]
    assert passage.missing == []
    assert passage.flags == []


# Flags


@pytest.mark.parametrize(
    ("page", "claim", "flagged"),
    [
        ("Emissions did not fall.", "emissions fell", True),
        ("Emissions fell.", "emissions did not fall", True),
        ("Emissions never fell.", "emissions fell", True),
        ("Emissions didn't fall.", "emissions fell", True),
        ("Growth without emissions.", "emissions growth", True),
        ("Emissions did not fall.", "emissions did not fall", False),
        ("Emissions fell.", "emissions fell", False),
    ],
)
def test_negation_mismatch_marks_one_sided_negation(page: str, claim: str, flagged: bool) -> None:
    flags = find_passages(page, claim).passages[0].flags
    assert ("negation_mismatch" in flags) is flagged


@pytest.mark.parametrize(
    ("page", "claim", "flagged"),
    [
        ("Emissions fell 15 % last year.", "emissions fell 12 percent", True),
        ("Emissions fell 12 % or 15 %.", "emissions fell 12 percent", False),
        ("Emissions fell 15 % last year.", "emissions fell", False),
        ("Emissions fell last year.", "emissions fell 12 percent", False),
        ("Emissions fell 12.0 % in 2025.", "emissions fell 12 percent in 2025", False),
    ],
)
def test_number_mismatch_needs_a_number_missing_on_each_side(
    page: str, claim: str, flagged: bool
) -> None:
    flags = find_passages(page, claim).passages[0].flags
    assert ("number_mismatch" in flags) is flagged


def test_flags_never_change_score_or_order() -> None:
    negated = find_passages("Emissions did not fall in 2025.", "emissions fell in 2025")
    plain = find_passages("Emissions did fall in 2025.", "emissions fell in 2025")
    assert negated.passages[0].score == plain.passages[0].score
    assert negated.passages[0].flags == ["negation_mismatch"]


# Missing words, text cap, scoring


def test_missing_lists_at_most_20_words_in_the_claims_spelling() -> None:
    claim = "Emissions " + " ".join(f"Word{chr(97 + i)}x" for i in range(25))
    result = find_passages("Emissions are measured. Nothing else here.", claim)
    missing = result.passages[0].missing
    assert len(missing) == 20
    assert missing[0] == "Wordax"  # claim order and spelling, "Emissions" held
    assert "Emissions" not in missing


def test_passage_text_is_capped_at_800_characters() -> None:
    filler = " ".join(["extraordinarily"] * 38)
    page = f"Emissions {filler}. Growth {filler}."
    passage = find_passages(page, "emissions growth").passages[0]
    assert passage.end - passage.start > 800
    assert len(passage.text) == 800
    assert passage.text.endswith("...")
    assert page[passage.start : passage.end].startswith(passage.text[:-3])


def test_score_follows_the_documented_weights() -> None:
    page = "Alpha beta. Gamma delta. Alpha gamma."
    result = find_passages(page, "alpha beta")
    first, second = result.passages
    assert (first.start, first.end, first.score) == (0, 11, 1.0)
    # 3 units; alpha is in 2, beta in 1: BM25 idf ln(1 + (N - df + 0.5) / (df + 0.5)).
    alpha, beta = math.log(1 + 1.5 / 2.5), math.log(1 + 2.5 / 1.5)
    assert second.text == "Alpha gamma."
    assert second.score == round(0.75 * alpha / (alpha + beta), 3)


def test_word_pairs_count_across_stop_words_and_in_either_order() -> None:
    claim = "drop in emissions"
    with_pair = find_passages("Emissions had a drop.", claim).passages[0]
    broken = find_passages("Emissions had a sharp drop.", claim).passages[0]
    assert with_pair.score == 1.0
    assert broken.score == 0.75


def test_a_claim_word_rare_on_the_page_outweighs_a_common_one() -> None:
    page = "Tax rose. Tax fell. Tax held. Tax moved. Budget tax."
    result = find_passages(page, "tax budget")
    assert result.passages[0].text == "Budget tax."
    assert result.passages[1].score < 0.5


def test_passages_are_ordered_by_score_and_never_overlap() -> None:
    page = " ".join(
        [
            "Solar output rose sharply.",
            "Wind output fell.",
            "Solar panels got cheaper.",
            "Nothing relevant here.",
            "Solar wind output records.",
        ]
    )
    result = find_passages(page, "solar output rose")
    scores = [p.score for p in result.passages]
    assert scores == sorted(scores, reverse=True)
    assert len(result.passages) <= 3
    spans = sorted((p.start, p.end) for p in result.passages)
    assert all(a_end < b_start for (_, a_end), (b_start, _) in pairwise(spans))


def test_two_neighbouring_sentences_form_one_passage_when_together_they_hold_more() -> None:
    page = "The agency published data. Emissions fell that year. Unrelated words follow."
    passage = find_passages(page, "agency emissions").passages[0]
    assert passage.text == "The agency published data. Emissions fell that year."


@pytest.mark.parametrize("claim", ["the and of", "!!! ... ???", "", "it was not"])
def test_a_claim_of_only_common_words_or_punctuation_is_refused(claim: str) -> None:
    with pytest.raises(ClaimHasNoWords):
        find_passages(DEMO_PAGE, claim)


# The claim-word search equals tokenising the whole page

vocabulary = [
    "report", "reported", "reporting", "Reports", "agency", "agencies", "dying", "die",
    "lying", "lie", "happy", "happiness", "stability", "stable", "cry", "cried", "emissions",
    "emission", "don't", "isn't", "can't", "o'clock", "12", "12.0", "1,000", "1000", "012",
    "12.5", "2025", "%", "percent", "東", "京", "the", "of", "a", "is", "İstanbul",
]  # fmt: skip
separators = [" ", ", ", ". ", "-", "'", "(", ")", "", "5", "x"]


@settings(deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(vocabulary), st.sampled_from(separators)), max_size=40),
    st.lists(st.sampled_from(vocabulary), min_size=1, max_size=6),
)
def test_claim_word_search_finds_exactly_the_claim_words_of_the_page(parts, claim_words) -> None:
    text = "".join(word + sep for word, sep in parts)
    claim_text = " ".join(claim_words)
    try:
        claim = _read_claim(claim_text)
    except ClaimHasNoWords:
        return
    expected = [(t.start, t.key) for t in _tokens(text) if t.key in set(claim.keys)]
    assert [(t.start, t.key) for t in _claim_hits(text, claim)] == expected


# Sentence splitting in bulk equals the rules applied one candidate at a time


def _split_one_by_one(text: str) -> list[tuple[int, int]]:
    """The sentence rules applied mark by mark, as plainly as they read (the reference)."""
    ends = [m.end() for m in _SENTENCE_END_RE.finditer(text) if _ends_sentence(text, m)]
    units: list[tuple[int, int]] = []
    pos = 0
    for end in [*ends, len(text)]:
        start = pos
        while start < end and text[start].isspace():
            start += 1
        pos = end
        if start >= end:
            continue
        if end in ends:  # a sentence, however long, is one unit
            units.append((start, end))
            continue
        if _CJK_RE.search(text, start, end):
            words = [(m.start(), m.end()) for m in _CUT_WORD_RE.finditer(text, start, end)]
        elif text.count(" ", start, end) < 40:
            units.append((start, end))
            continue
        else:
            words, at = [], start
            for part in text[start:end].split(" "):
                if part:
                    words.append((at, at + len(part)))
                at += len(part) + 1
        for i in range(0, len(words), 40):
            units.append((words[i][0], words[min(i + 40, len(words)) - 1][1]))
    return units


sentence_parts = st.sampled_from(
    [
        "Dr.", "MR.", "approx.", "e.g.", "e.g.,", "U.S.", "a.m.", "etc.", "etc.)", 'etc."',
        "J.", "a.", "Fig.)", "(Prof.", "'b.", "x.y.z.w.v.u.t.s.", "abcdefghijklmnop.",
        "word", "end.", "why?", "no!", "Wait...", "?!", '"stop."', "12.5", "1,000", ".", "..",
        "东京", "。", "｡", "本当?", "\uff09", "」", "İ.", "\u00a0", "\t", "\x1c",
        "." * 12, "?!" * 6,
    ]
)  # fmt: skip
gaps = st.sampled_from(["", " ", " ", "  ", "\n"])


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(sentence_parts, gaps), max_size=120), st.booleans())
def test_split_units_equals_the_rules_applied_one_mark_at_a_time(parts, ascii_only) -> None:
    text = "".join(part + gap for part, gap in parts if part.isascii() or not ascii_only)
    assert split_units(text) == _split_one_by_one(text)
