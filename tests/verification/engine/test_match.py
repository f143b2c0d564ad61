"""Exact and fuzzy matching, context windows and the shared work budget."""

from __future__ import annotations

import random

import edlib
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from rapidfuzz.distance import Levenshtein

from attest_core.normalise import normalise
from tests.verification.engine.demo import DEMO_PAGE
from verification.engine.match import (
    FUZZY_WORK_PER_CALL,
    MatchTooCostly,
    WorkBudget,
    _align_any_alphabet,
    _Aligner,
    _Haystack,
    _may_fold,
    _may_narrow,
    context_window,
    match_quote,
    max_edits,
)

LONG_S, KELVIN = "\u017f", "\u212a"
SAMPLE_PAGE = (
    "Regional climate report 2025. In its annual summary the agency said that "
    "emissions fell 12 % in 2025, after two years of slow growth."
)


def _words_text(n_words: int, seed: int) -> str:
    rng = random.Random(seed)
    vocabulary = [
        "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9)))
        for _ in range(3000)
    ]
    return " ".join(rng.choice(vocabulary) for _ in range(n_words))


def _edit(quote: str, edits: int, seed: int) -> str:
    rng = random.Random(seed)
    chars = list(quote)
    for _ in range(edits):
        i = rng.randrange(len(chars))
        op = rng.randrange(3)
        if op == 0:
            chars[i] = rng.choice("abcdefghijklmnopqrstuvwxyz")
        elif op == 1:
            chars.insert(i, rng.choice("abcdefghijklmnopqrstuvwxyz"))
        elif len(chars) > 1:
            del chars[i]
    return "".join(chars)


# Exact


def test_exact_counts_every_occurrence_and_reports_the_first() -> None:
    result = match_quote("the cat, the hat, THE bat", "the", mode="exact")
    assert (result.match, result.score, result.start, result.end) == ("exact", 1.0, 0, 3)
    assert result.occurrences == 3
    assert result.work == 0


def test_exact_counts_non_overlapping_occurrences() -> None:
    assert match_quote("aaaa", "aa", mode="exact").occurrences == 2


def test_exact_case_sensitive_ignores_other_cases() -> None:
    result = match_quote("The the THE", "the", mode="exact", case_sensitive=True)
    assert (result.start, result.occurrences) == (4, 1)


def test_exact_absent_quote_is_none_with_null_fields() -> None:
    result = match_quote(SAMPLE_PAGE, "not on the page", mode="exact")
    assert (result.match, result.score, result.start, result.end) == ("none", None, None, None)
    assert (result.context, result.occurrences) == (None, 0)


@pytest.mark.parametrize(
    ("text", "quote", "span"),
    [
        ("Die Straße ist lang", "STRASSE", "Straße"),  # ß folds to two letters
        ("Die STRASSE ist lang", "straße", "STRASSE"),
        ("Go to İstanbul now", "İSTANBUL", "İstanbul"),  # İ folds to i + dot above
        ("aﬀ x ﬀ", "FF", "ﬀ"),  # a ligature that survives as text folds to two letters
        ("ΣΊΣΥΦΟΣ ran", "σίσυφος", "ΣΊΣΥΦΟΣ"),
    ],
)
def test_exact_offsets_select_the_span_when_folding_changes_length(
    text: str, quote: str, span: str
) -> None:
    result = match_quote(text, quote, mode="exact")
    assert result.match == "exact"
    assert text[result.start : result.end] == span


def test_exact_does_not_match_half_of_a_folded_character() -> None:
    assert match_quote("Maß", "s", mode="exact").match == "none"
    result = match_quote("Maß und Masse", "mass", mode="exact")
    assert (result.occurrences, result.start, result.end) == (2, 0, 3)


def test_offsets_after_a_growing_character_stay_in_the_original_text() -> None:
    text = "ßßß then the quote here"
    result = match_quote(text, "THE QUOTE", mode="exact")
    assert text[result.start : result.end] == "the quote"


@settings(deadline=None)
@given(
    st.text(alphabet=st.characters(max_codepoint=127), max_size=60),
    st.text(alphabet=st.sampled_from([*"aAzZ@[`{ \x00\x7f", LONG_S, KELVIN, "ß", "é"]), min_size=1),
    st.booleans(),
)
def test_exact_on_ascii_pages_equals_casefold_find_and_count(text, quote, case_sensitive) -> None:
    """The ASCII path folds in numpy: every byte folds as ``str.casefold`` folds it, and a
    quote that folds to ASCII (the long s to ``s``, the Kelvin sign to ``k``) is still found."""
    page, needle = (text, quote) if case_sensitive else (text.casefold(), quote.casefold())
    result = match_quote(text, quote, mode="exact", case_sensitive=case_sensitive)
    first = page.find(needle)
    if first == -1:
        assert result.match == "none"
    else:
        assert (result.match, result.start, result.end) == ("exact", first, first + len(needle))
        assert result.occurrences == page.count(needle)


def test_exact_on_an_ascii_page_folds_every_byte_as_casefold_does() -> None:
    every = "".join(map(chr, range(128)))
    for quote in (every, every.upper(), every.lower()):
        result = match_quote(every * 3, quote, mode="exact")
        assert (result.match, result.start, result.occurrences) == ("exact", 0, 3)
    assert match_quote("straSSe", f"STRA{LONG_S * 2}E", mode="exact").start == 0
    assert match_quote("strasse", "STRASSE", mode="exact", case_sensitive=True).match == "none"
    assert match_quote("a strasse", LONG_S, mode="exact", case_sensitive=True).match == "none"


# Fuzzy


def test_fuzzy_scores_the_seed_sample_as_published() -> None:
    quote = "emissions fell 12% in 2025"  # 26 characters against a 27-character span
    result = match_quote(SAMPLE_PAGE, quote)
    assert result.match == "fuzzy"
    assert SAMPLE_PAGE[result.start : result.end] == "emissions fell 12 % in 2025"
    assert result.score == 0.963
    assert result.occurrences == 1


def test_fuzzy_on_the_demo_page_gives_the_published_offsets() -> None:
    result = match_quote(DEMO_PAGE, "emissions fell 12% in 2025")
    assert (result.match, result.score, result.start, result.end) == ("fuzzy", 0.963, 211, 238)
    assert "the agency said that emissions fell 12 % in 2025, after two years" in result.context


def test_fuzzy_reports_an_exact_hit_as_exact_with_score_one() -> None:
    result = match_quote(SAMPLE_PAGE, "Emissions fell 12 % in 2025")
    assert (result.match, result.score, result.work) == ("exact", 1.0, 0)


def test_fuzzy_span_has_the_true_alignment_ends_not_the_quote_length() -> None:
    text = "prefix words the quick brown fox jumped over the lazy dog suffix words"
    quote = "quick brown fox jumps over lazy dog"
    result = match_quote(text, quote, threshold=0.8)
    assert result.match == "fuzzy"
    span = text[result.start : result.end]
    assert span == "quick brown fox jumped over the lazy dog"
    assert result.score == round(1 - Levenshtein.distance(quote, span) / len(span), 3)


def test_fuzzy_below_threshold_is_none_and_costs_work() -> None:
    result = match_quote(SAMPLE_PAGE, "emissions rose sharply in 1999", threshold=0.9)
    assert result.match == "none"
    assert result.work == len(SAMPLE_PAGE) * len("emissions rose sharply in 1999")


def test_fuzzy_threshold_decides_acceptance() -> None:
    quote = "emissions fell 12% in 2025"
    assert match_quote(SAMPLE_PAGE, quote, threshold=0.96).match == "fuzzy"
    assert match_quote(SAMPLE_PAGE, quote, threshold=0.97).match == "none"


def test_fuzzy_case_insensitive_by_default_and_sensitive_on_request() -> None:
    quote = "EMISSIONS FELL 12% IN 2025"
    assert match_quote(SAMPLE_PAGE, quote).match == "fuzzy"
    assert match_quote(SAMPLE_PAGE, quote, case_sensitive=True).match == "none"


def test_fuzzy_on_a_long_page_finds_what_a_full_alignment_finds() -> None:
    text = _words_text(40_000, seed=1)  # about 240,000 characters
    original = text[120_000:121_000]
    quote = _edit(original, 50, seed=2)
    result = match_quote(text, quote)
    assert result.match == "fuzzy"
    full = edlib.align(quote, text, mode="HW", task="locations")
    span = text[result.start : result.end]
    assert Levenshtein.distance(quote, span) == full["editDistance"]
    assert result.start < 121_000 and result.end > 120_000


def test_fuzzy_handles_quotes_with_more_than_255_distinct_characters() -> None:
    rng = random.Random(5)
    alphabet = [chr(0x4E00 + i) for i in range(600)]
    text = "".join(rng.choice(alphabet) for _ in range(5_000))
    original = text[2_000:2_400]
    assert len(set(original)) > 255
    quote = original[:100] + original[101:300] + "字" + original[300:]
    result = match_quote(text, quote)
    assert result.match == "fuzzy"
    assert (result.start, result.end) == (2_000, 2_400)
    assert result.score == round(1 - 2 / 400, 3)


def test_wide_alphabet_quote_at_the_lowest_threshold_is_found_or_refused_unspent() -> None:
    rng = random.Random(8)
    alphabet = [chr(0x4E00 + i) for i in range(3000)]
    text = "".join(rng.choice(alphabet) for _ in range(80_000))
    present = text[40_000:41_000]
    found = match_quote(text, present[:500] + "字" + present[501:], threshold=0.5)
    assert (found.match, found.start, found.end) == ("fuzzy", 40_000, 41_000)
    absent = "".join(rng.choice(alphabet) for _ in range(1_000))
    budget = WorkBudget(FUZZY_WORK_PER_CALL)
    with pytest.raises(MatchTooCostly) as caught:
        match_quote(text, absent, threshold=0.5, budget=budget)
    assert "distinct characters" in str(caught.value)
    assert caught.value.reason == "wide_alphabet"
    assert budget.remaining == FUZZY_WORK_PER_CALL


def test_fuzzy_absent_quote_on_a_long_page_is_none() -> None:
    text = _words_text(40_000, seed=3)
    quote = _words_text(150, seed=4)[:900]
    assert match_quote(text, quote).match == "none"


# Context


def test_context_cuts_at_word_boundaries_with_ellipses() -> None:
    text = " ".join(f"word{i:03d}" for i in range(100))
    start = text.index("word050")
    context = context_window(text, start, start + 7)
    assert context.startswith("...word") and context.endswith("...")
    inner = context.removeprefix("...").removesuffix("...")
    assert inner in text
    assert text[text.index(inner) - 1] == " "  # starts at a word
    assert text[text.index(inner) + len(inner)] == " "  # ends at a word
    assert 150 <= len(inner) <= 7 + 2 * 80


def test_context_of_a_short_text_is_the_whole_text() -> None:
    assert context_window("short page", 0, 5) == "short page"


# Budget


def test_a_too_costly_fuzzy_match_raises_match_too_costly_without_spending() -> None:
    budget = WorkBudget(100)
    with pytest.raises(MatchTooCostly) as caught:
        match_quote(SAMPLE_PAGE, "emissions fell 12% in 2025", budget=budget)
    error = caught.value
    assert error.code == "match_too_costly"
    assert error.needed == len(SAMPLE_PAGE) * 26
    assert error.budget == 100
    assert not error.exhausted
    assert error.reason == "budget_exceeded"
    assert budget.remaining == 100


def test_shared_budget_runs_out_in_order_and_exact_still_matches() -> None:
    quote = "emissions fell 12% in 2025"
    one_call = len(SAMPLE_PAGE) * len(quote)
    budget = WorkBudget(2 * one_call)
    first = match_quote(SAMPLE_PAGE, quote, budget=budget)
    second = match_quote(SAMPLE_PAGE, quote, budget=budget)
    assert (first.match, second.match) == ("fuzzy", "fuzzy")
    assert first.work == second.work == one_call
    assert budget.remaining == 0
    with pytest.raises(MatchTooCostly) as caught:
        match_quote(SAMPLE_PAGE, quote, budget=budget)
    assert caught.value.exhausted
    assert caught.value.reason == "budget_used_up"
    assert "used up" in str(caught.value)
    exact = match_quote(SAMPLE_PAGE, "emissions fell 12 % in 2025", budget=budget)
    assert (exact.match, exact.work) == ("exact", 0)
    assert match_quote(SAMPLE_PAGE, quote, mode="exact", budget=budget).match == "none"


def test_one_call_budget_covers_a_full_quote_on_a_five_megabyte_page() -> None:
    assert FUZZY_WORK_PER_CALL >= 1_000 * 5_000_000


# Properties

page_text = st.text(
    alphabet=st.one_of(st.sampled_from(list("abcdeABCDE ßİﬀΣσς")), st.characters()),
    min_size=1,
    max_size=80,
).map(lambda raw: normalise(raw).text)


@settings(deadline=None)
@given(page_text, st.data(), st.booleans())
def test_exact_finds_any_substring_at_offsets_inside_the_text(text, data, case_sensitive) -> None:
    assume(text)
    start = data.draw(st.integers(0, len(text) - 1))
    end = data.draw(st.integers(start + 1, len(text)))
    quote = text[start:end]
    result = match_quote(text, quote, mode="exact", case_sensitive=case_sensitive)
    assert result.match == "exact"
    assert 0 <= result.start <= result.end <= len(text)
    span = text[result.start : result.end]
    if case_sensitive:
        assert span == quote
    else:
        assert span.casefold() == quote.casefold()
    assert result.occurrences >= 1


@settings(deadline=None)
@given(page_text, page_text)
def test_offsets_never_fall_outside_the_text(text, quote) -> None:
    assume(quote)
    result = match_quote(text, quote, threshold=0.5)
    if result.match != "none":
        assert 0 <= result.start <= result.end <= len(text)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.integers(0, 3), st.integers(40, 200))
def test_fuzzy_with_a_few_edits_finds_a_span_overlapping_the_original(seed, edits, size) -> None:
    text = _words_text(2_000, seed=seed)
    rng = random.Random(seed)
    start = rng.randrange(0, len(text) - size)
    original = (start, start + size)
    quote = _edit(text[start : start + size], edits, seed=seed + 1)
    result = match_quote(text, quote)
    assert result.match in ("exact", "fuzzy")
    assert result.start < original[1] and result.end > original[0]


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.integers(0, 30), st.integers(100, 1_000))
def test_candidate_filter_loses_nothing_against_a_full_alignment(seed, edits, size) -> None:
    text = _words_text(6_000, seed=seed)
    rng = random.Random(seed)
    start = rng.randrange(0, len(text) - size)
    quote = _edit(text[start : start + size], edits, seed=seed + 1)
    full = edlib.align(quote, text, mode="HW", task="locations")
    result = match_quote(text, quote, threshold=0.85)
    if result.match == "exact":
        assert full["editDistance"] == 0
    elif result.match == "fuzzy":
        span = text[result.start : result.end]
        assert Levenshtein.distance(quote, span) == full["editDistance"]
    else:
        # No span reaches the threshold: even the best full alignment falls short.
        best_start, best_last = full["locations"][0]
        span = text[best_start : best_last + 1]
        assert 1 - full["editDistance"] / max(len(quote), len(span)) < 0.85


def _full_alignment_answer(text: str, quote: str, threshold: float) -> tuple:
    """What the documented rule gives, from one edlib alignment over the whole text."""
    if quote in text:
        return ("exact", text.index(quote), text.index(quote) + len(quote))
    full = edlib.align(quote, text, mode="HW", task="locations")
    distance = full["editDistance"]
    if distance > max_edits(len(quote), threshold):
        return ("none", None, None)
    start, last = min(full["locations"], key=lambda loc: (loc[0] - loc[1], loc[0]))
    span = text[start : last + 1]
    if 1 - distance / max(len(quote), len(span)) < threshold:
        return ("none", None, None)
    return ("fuzzy", start, last + 1)


@settings(max_examples=150, deadline=None)
@given(
    st.integers(0, 10**6),
    st.integers(1_000, 8_000),
    st.integers(12, 300),
    st.floats(0.0, 0.2),
    st.sampled_from([0.5, 0.7, 0.85, 0.9, 0.95]),
    st.sampled_from(["ab ", "abcd ", "abcdefghijklmnopqrstuvwxyz "]),
)
def test_sampled_filter_answer_equals_a_full_alignment(
    seed, size, length, rate, threshold, letters
) -> None:
    # Small alphabets make repeats and near-misses everywhere: the worst case for a filter.
    rng = random.Random(seed)
    text = "".join(rng.choice(letters) for _ in range(size))
    start = rng.randrange(0, size - length)
    quote = _edit(text[start : start + length], round(length * rate), seed=seed + 1)
    quote = quote.replace(" ", "a").strip() or "a"
    result = match_quote(text, quote, threshold=threshold, case_sensitive=True)
    assert (result.match, result.start, result.end) == _full_alignment_answer(
        text, quote, threshold
    )


@settings(max_examples=150, deadline=None)
@given(
    st.integers(0, 10**6),
    st.integers(1_000, 8_000),
    st.integers(16, 300),
    st.floats(0.0, 0.2),
    st.sampled_from([0.5, 0.6, 0.7, 0.85, 0.9, 0.95]),
    st.sampled_from(["一二", "一二三四", "一二三四五六七八九十百千万"]),
)
def test_two_byte_text_sampled_every_eighth_position_equals_a_full_alignment(
    seed, size, length, rate, threshold, letters
) -> None:
    """Two-byte text samples 4-character grams at every eighth position first: the answer
    must still equal a full alignment's, on small alphabets full of near-misses."""
    rng = random.Random(seed)
    text = "".join(rng.choice(letters) for _ in range(size))
    start = rng.randrange(0, size - length)
    quote = _edit(text[start : start + length], round(length * rate), seed=seed + 1)
    quote = "".join(c if c in letters else letters[0] for c in quote)
    result = match_quote(text, quote, threshold=threshold, case_sensitive=True)
    assert (result.match, result.start, result.end) == _full_alignment_answer(
        text, quote, threshold
    )
    if result.match == "fuzzy":
        span = text[result.start : result.end]
        distance = Levenshtein.distance(quote, span)
        assert result.score == round(1 - distance / max(len(quote), len(span)), 3)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10**6), st.integers(0, 12), st.sampled_from([0.7, 0.9]))
def test_wide_text_fuzzy_distance_equals_a_full_alignment(seed, edits, threshold) -> None:
    rng = random.Random(seed)
    alphabet = [chr(0x4E00 + i) for i in range(rng.choice([30, 400, 3000]))]
    text = "".join(rng.choice(alphabet) for _ in range(6_000))
    start = rng.randrange(0, 5_500)
    chars = list(text[start : start + rng.randint(40, 400)])
    for _ in range(edits):
        chars[rng.randrange(len(chars))] = rng.choice(alphabet)
    quote = "".join(chars)
    result = match_quote(text, quote, threshold=threshold)
    # Reference: a plain dynamic-programming alignment over the whole text.
    codes = np.array([ord(c) for c in text], dtype=np.uint32)
    q_codes = np.array([ord(c) for c in quote], dtype=np.uint32)
    full, start, end = _align_any_alphabet(q_codes, codes, len(quote))
    if result.match == "exact":
        assert full == 0
    elif result.match == "fuzzy":
        assert Levenshtein.distance(quote, text[result.start : result.end]) == full
    else:
        score = 1 - full / max(len(quote), end - start)
        assert full > max_edits(len(quote), threshold) or score < threshold


def test_every_bmp_character_that_casefold_changes_lies_in_a_fold_range() -> None:
    """CJK-like pages fold only the characters ``_may_fold`` picks: none may be missed."""
    every = np.arange(0x10000, dtype=np.uint16)
    changed = [cp for cp in range(0x10000) if chr(cp).casefold() != chr(cp)]
    assert _may_fold(every)[changed].all()
    assert not _may_fold(np.array([0x4E00, 0x3002, 0xAC00, 0x2C, 0x30], dtype=np.uint16)).any()


def test_a_cjk_page_folds_its_few_latin_and_greek_letters() -> None:
    page = "中文" * 40 + "ΣΊΣΥΦΟΣ Straße ÀÉÎ" + "。" * 40
    for quote, span in (("σίσυφος", "ΣΊΣΥΦΟΣ"), ("STRASSE", "Straße"), ("àéî", "ÀÉÎ")):
        result = match_quote(page, quote, mode="exact")
        assert page[result.start : result.end] == span


@pytest.mark.parametrize("present", [True, False])
def test_a_filter_that_would_keep_the_whole_page_is_skipped_with_the_same_answer(present) -> None:
    # At threshold 0.8 a 1,000-character quote allows 250 edits: only the 2-gram
    # filter can bound anything, and on prose its grams are everywhere. It is
    # skipped (a probe of the page's start keeps nearly all of it), and the page
    # is aligned whole: the answer is still a full alignment's.
    text = _words_text(60_000, seed=11)  # about 360,000 characters
    quote = _edit(text[180_000:181_000], 150, seed=12) if present else _words_text(170, 13)[:1000]
    threshold = 0.8
    k = max_edits(len(quote), threshold)
    hay = _Haystack(text, False)
    aligner = _Aligner(hay.codes, quote.casefold())
    assert not _may_narrow(hay.codes, aligner, 2, 2, k)
    result = match_quote(text, quote, threshold=threshold)
    full = best_fuzzy_span_reference(hay.codes, quote.casefold(), k)
    if present:
        assert result.match == "fuzzy"
        assert Levenshtein.distance(quote, text[result.start : result.end]) == full
        assert result.start < 181_000 and result.end > 180_000
    else:
        assert (full, result.match) == (None, "none")


def best_fuzzy_span_reference(t_codes: np.ndarray, quote: str, k: int) -> int | None:
    """The fewest edits of any span within k: one edlib pass over the whole page."""
    found = edlib.align(quote.encode("ascii"), t_codes.tobytes(), mode="HW", k=k)
    return None if found["editDistance"] < 0 else found["editDistance"]


def test_a_quote_settled_at_its_richest_place_aligns_no_other_place(monkeypatch) -> None:
    # The richest place holds the quote (a few edits); at its distance the first
    # filter keeps nothing outside it, so the two next-richest places, which cannot
    # hold a closer span, are not aligned: only that place's text goes to edlib.
    text = _words_text(20_000, seed=21)  # about 120,000 characters
    quote = _edit(text[60_000:60_200], 4, seed=22)
    aligned: list[int] = []
    real_align = edlib.align

    def counting_align(query, target, **options):
        aligned.append(len(target))
        return real_align(query, target, **options)

    monkeypatch.setattr(edlib, "align", counting_align)
    result = match_quote(text, quote, threshold=0.9)
    monkeypatch.undo()
    k = max_edits(len(quote), 0.9)
    full = best_fuzzy_span_reference(_Haystack(text, False).codes, quote.casefold(), k)
    assert result.match == "fuzzy"
    assert Levenshtein.distance(quote, text[result.start : result.end]) == full
    assert len(aligned) == 1
    assert aligned[0] <= 3 * (len(quote) + k)


def test_an_absent_quote_at_a_low_threshold_aligns_the_page_once(monkeypatch) -> None:
    # At 0.5 a quote may have as many edits as characters: past a third of them no
    # filter bounds anything, so the page is aligned whole whatever the places hold.
    # The richest place is aligned only up to what a filter could use, the next two
    # not at all (on this page they would cost a tenth of the pass they cannot spare),
    # and the ends the pass finds together are located in one stretch.
    text = _words_text(8_000, seed=21)  # about 50,000 characters
    quote = _words_text(40, seed=99)[:200]
    aligned: list[tuple[int, int]] = []
    real_align = edlib.align

    def counting_align(query, target, **options):
        aligned.append((len(target), options.get("k", -1)))
        return real_align(query, target, **options)

    monkeypatch.setattr(edlib, "align", counting_align)
    result = match_quote(text, quote, threshold=0.5)
    monkeypatch.undo()
    assert (result.match, result.start, result.end) == _full_alignment_answer(
        text.casefold(), quote.casefold(), 0.5
    )
    first, whole, *located = aligned
    assert first[0] <= 3 * 2 * len(quote) and first[1] < len(quote) // 3
    assert whole == (len(text), len(quote))
    assert len(located) == 1
