"""Normalisation: the seed's rules, the map back to input positions, idempotence."""

from __future__ import annotations

import hashlib
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attest_core.normalise import (
    _INVISIBLE_RANGES,
    _QUOTES_AND_DASHES,
    _normalise_mapped,
    normalise,
)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("ﬁne ﬂow", "fine flow"),  # ligatures (NFKC)
        ("\uff21\uff22\uff23\uff11\uff12\uff13", "ABC123"),  # full-width forms (NFKC)
        ("x²", "x2"),
        ("e\u0301te\u0301", "été"),  # composed
        ("\u2018single\u2019 \u201cdouble\u201d \u201elow\u201f", '\'single\' "double" "low"'),
        ("it\u02bcs", "it's"),
        ("a\u2010b\u2011c\u2012d\u2013e\u2014f\u2015g\u2212h", "a-b-c-d-e-f-g-h"),
        ("zero\u200bwidth\u200c\u200djoin", "zerowidthjoin"),
        ("soft\u00adhyphen", "softhyphen"),
        ("\ufeffbom", "bom"),
        ("\u200eleft\u200fright\u202aembed\u202e\u2066iso\u2069", "leftrightembediso"),
        ("word\u2060joiner", "wordjoiner"),
        ("emoji\ufe0f", "emoji"),
        ("lone\ud800surrogate", "lonesurrogate"),
        ("tab\there", "tab here"),
        ("lines\n\n\r\nhere", "lines here"),
        ("nbsp\u00a0\u00a0here", "nbsp here"),
        ("ideo\u3000space", "ideo space"),
        ("  padded  ", "padded"),
        ("\n\t", ""),
        ("", ""),
    ],
)
def test_normalise_applies_the_published_rules(raw: str, expected: str) -> None:
    assert normalise(raw).text == expected


def test_normalise_maps_each_code_point_back_to_its_input_position() -> None:
    raw = "  Hello\u00a0\u00a0wo\u200brld ﬁ!"
    result = normalise(raw)
    assert result.text == "Hello world fi!"
    assert result.to_source(0) == 2  # H, after the stripped spaces
    assert result.to_source(5) == 7  # the one space standing for two no-break spaces
    assert result.to_source(6) == 9  # w
    assert result.to_source(8) == 12  # r, after the dropped zero-width space
    assert result.to_source(12) == result.to_source(13) == 16  # f and i both come from ﬁ
    assert result.to_source(len(result.text)) == len(raw)


def test_to_source_refuses_positions_outside_the_text() -> None:
    with pytest.raises(IndexError):
        normalise("abc").to_source(4)


def test_sha256_is_over_the_utf8_of_the_normalised_text() -> None:
    result = normalise("Caf\u00e9 \u201cmenu\u201d")
    assert result.sha256 == hashlib.sha256('Café "menu"'.encode()).hexdigest()


messy_text = st.text(
    alphabet=st.one_of(
        st.characters(),
        st.sampled_from(list(" \t\n\u00a0\u200b\u00ad\ufeff\u2019\u201c\u2014ﬁßİ\u0301\u0308ｶﾞ")),
    ),
    max_size=60,
)


@settings(deadline=None)
@given(messy_text)
def test_normalise_is_idempotent(raw: str) -> None:
    once = normalise(raw).text
    assert normalise(once).text == once


@settings(deadline=None)
@given(messy_text)
def test_position_map_is_monotonic_and_inside_the_input(raw: str) -> None:
    result = normalise(raw)
    positions = [result.to_source(i) for i in range(len(result.text) + 1)]
    assert positions == sorted(positions)
    assert all(0 <= p <= len(raw) for p in positions)
    assert positions[-1] == len(raw)
    for i, ch in enumerate(result.text):
        if ch.isascii() and ch.isalnum():
            # An ASCII letter or digit comes from that character, or one NFKC expands into it.
            assert ch in unicodedata.normalize("NFKC", raw[positions[i]])


@settings(deadline=None)
@given(messy_text)
def test_normalised_text_has_no_untidy_whitespace(raw: str) -> None:
    text = normalise(raw).text
    assert "  " not in text
    assert text == text.strip()
    assert all(ch == " " or not ch.isspace() for ch in text)


def _plainly(raw: str) -> str:
    """The published rules as plain string operations, character by character (the reference)."""
    kept = "".join(ch for ch in raw if not any(a <= ord(ch) <= b for a, b in _INVISIBLE_RANGES))
    return " ".join(unicodedata.normalize("NFKC", kept).translate(_QUOTES_AND_DASHES).split())


wide_text = st.text(
    alphabet=st.one_of(
        st.characters(),
        st.sampled_from(
            [
                *"ab .\t\n\u00a0\u2019\u201c\u2014\u2026™½µﬁßİé\u0301\u0323",
                *"\u1161\u11a8가ㄱㅏｶﾞ\u3000",
                *[
                    "\U0001f600",
                    "\U000e0041",
                    "\ud800",
                    "\u212b",
                    "\u0344",
                    "\u1e9b",
                    "\x00",
                    "\x85",
                ],
            ]
        ),
    ),
    max_size=80,
)


@settings(max_examples=300, deadline=None)
@given(wide_text)
def test_normalised_text_equals_the_rules_applied_with_plain_string_operations(raw) -> None:
    assert normalise(raw).text == _plainly(raw)


ascii_text = st.text(
    alphabet=st.one_of(
        st.characters(max_codepoint=0x7F),
        st.sampled_from(list(" \t\n\r\x0b\x0c\x1c\x1f\x00\x08\x1b\x7fab")),
    ),
    max_size=60,
)


@settings(deadline=None)
@given(ascii_text)
def test_ascii_text_is_normalised_as_the_code_point_path_does_with_the_same_map(raw) -> None:
    quick, mapped = normalise(raw), _normalise_mapped(raw)
    assert quick.text == mapped.text == _plainly(raw)
    assert [quick.to_source(i) for i in range(len(quick.text) + 1)] == [
        mapped.to_source(i) for i in range(len(mapped.text) + 1)
    ]


def test_an_ascii_tab_becoming_a_space_is_a_change_though_the_length_is_the_same() -> None:
    assert normalise("a\tb").text == "a b"
    assert normalise("a\x7fb ").to_source(1) == 2


@settings(max_examples=300, deadline=None)
@given(wide_text)
def test_the_map_built_on_first_use_is_the_map_built_with_the_text(raw) -> None:
    lazy, mapped = normalise(raw), _normalise_mapped(raw)
    assert lazy.text == mapped.text
    assert [lazy.to_source(i) for i in range(len(lazy.text) + 1)] == [
        mapped.to_source(i) for i in range(len(mapped.text) + 1)
    ]
