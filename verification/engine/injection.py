"""Flags for page text aimed at software agents rather than at the human reader."""

from __future__ import annotations

import re
import unicodedata
from functools import cache

import ahocorasick
import numpy as np

from attest_core.codepoints import codepoints

INSTRUCTIONS_IN_TEXT = "instructions_in_text"
INSTRUCTIONS_IN_HIDDEN_TEXT = "instructions_in_hidden_text"
INVISIBLE_CHARACTERS = "invisible_characters"
TAG_CHARACTERS = "unicode_tag_characters"

# Phrases that address an AI model's instructions. Kept narrow on purpose: a flag
# should point a reader at something worth a look, not fire on every "ignore".
_INSTRUCTION = re.compile(
    r"\b(?:ignore|disregard|forget|override)\s+(?:all\s+|any\s+|the\s+|your\s+)*"
    r"(?:previous|prior|above|earlier|preceding|system|original)\s+"
    r"(?:instructions?|prompts?|rules|directions|context)"
    r"|\b(?:you\s+are\s+now|from\s+now\s+on\s+you\s+are)\s+(?:an?\s+)?(?:ai|assistant|dan|"
    r"unrestricted|jailbroken)"
    r"|\bnew\s+(?:system\s+)?instructions\s*:"
    r"|\b(?:system\s+prompt|developer\s+message)\b"
    r"|\b(?:ai|llm|language\s+model|assistant|agent)s?\s+(?:reading|summari[sz]ing|processing)"
    r"\s+this\s+(?:page|document|text)"
    r"|\bif\s+you\s+are\s+an?\s+(?:ai|llm|language\s+model|assistant|agent)\b"
    r"|\bdo\s+not\s+(?:tell|inform|reveal\s+to)\s+the\s+user\b",
    re.I,
)
# Every phrase above contains one of these; the regex runs only near them, so a
# 10 MB page costs one Aho-Corasick pass over the lowered text (every occurrence
# of every trigger, overlapping ones included) rather than a regex at every position.
_TRIGGERS = (
    "ignore",
    "disregard",
    "forget",
    "override",
    "you are now",
    "from now on",
    "instructions",
    "system prompt",
    "developer message",
    " this page",
    " this document",
    " this text",
    "if you are a",
    "do not tell",
    "do not inform",
    "do not reveal",
)
_WINDOW = 160
_MAX_HITS = 2000


@cache
def _trigger_automaton() -> ahocorasick.Automaton:
    automaton = ahocorasick.Automaton()
    for trigger in _TRIGGERS:
        automaton.add_word(trigger, len(trigger) - 1)  # the value: end index minus start
    automaton.make_automaton()
    return automaton


_trigger_automaton()  # built at import, so that no request pays for it


# The automaton reads a text as 4 bytes a character (a 14 MB page cost 55 MB at once):
# it is given the text a piece at a time, each piece with the characters before it that
# a trigger ending in it may start on.
_PIECE_CHARS = 1 << 18
_LONGEST_TRIGGER = max(len(trigger) for trigger in _TRIGGERS)


def _trigger_starts(lowered: str, piece: int = _PIECE_CHARS) -> list[int]:
    """Where each trigger occurs in ``lowered``, in text order, at most ``_MAX_HITS``."""
    hits: list[int] = []
    automaton = _trigger_automaton()
    for at in range(0, len(lowered), piece):
        # Every trigger ending in [at, at + piece), and only those, in the
        # automaton's order: the same hits, in the same order, as one pass.
        since = max(0, at - _LONGEST_TRIGGER + 1)
        for end, back in automaton.iter(lowered[since : at + piece]):
            if since + end < at:
                continue  # the previous piece's
            hits.append(since + end - back)
            if len(hits) == _MAX_HITS:
                return hits
    return hits


# Characters that ``re.I`` matches to an ASCII letter of the phrases although ``str.lower``
# does not lower them to it (dotless i, long s, Kelvin sign), or that ``str.lower``
# lengthens (dotted capital I): a text holding one is read the slow way.
_CASE_SPECIALS = ("\u0130", "\u0131", "\u017f", "\u212a")
# The phrases in lower case, matched case-sensitively on lowered text: the same matches
# as _INSTRUCTION on the text when it holds none of _CASE_SPECIALS, at twice the speed.
_INSTRUCTION_LOWERED = re.compile(_INSTRUCTION.pattern)
_BYTE_TRIGGERS = tuple(trigger.encode("ascii") for trigger in _TRIGGERS)


def _byte_trigger_starts(lowered: bytes) -> list[int]:
    """Where each trigger occurs in ``lowered`` (ASCII bytes), the first ``_MAX_HITS``
    by where they end: the hits of _trigger_starts, found by ``bytes.find``.

    Each trigger's first ``_MAX_HITS`` occurrences hold all of its hits among the
    first ``_MAX_HITS`` overall, and no trigger ends another, so no two hits end at
    one place: sorting by the end picks the hits the one pass keeps.
    """
    hits: list[tuple[int, int]] = []
    for trigger in _BYTE_TRIGGERS:
        found = 0
        at = lowered.find(trigger)
        while at != -1 and found < _MAX_HITS:
            hits.append((at + len(trigger), at))
            found += 1
            at = lowered.find(trigger, at + 1)
    if len(hits) > _MAX_HITS:
        hits.sort()
        del hits[_MAX_HITS:]
    return [at for _, at in hits]


def _has_instructions(text: str) -> bool:
    if any(special in text for special in _CASE_SPECIALS):
        return _phrase_near(text, _trigger_starts(text.lower()), lowered=False)
    # Every other character keeps its place when lowered, and each non-ASCII one
    # becomes "?", which no trigger holds: the triggers are found on bytes.
    return _phrase_near(text, _byte_trigger_starts(text.encode("ascii", "replace").lower()))


def _phrase_near(text: str, starts: list[int], *, lowered: bool = True) -> bool:
    """Whether a phrase matches in a window around one of ``starts``.

    ``lowered``: each stretch of windows is lowered (with the character before it,
    which ``\\b`` reads) and searched case-sensitively; else ``text`` is searched
    with ``re.I``.
    """
    windows = sorted((max(0, at - _WINDOW), at + _WINDOW) for at in starts)
    # Overlapping windows are searched as one stretch first: no match in the
    # stretch means none in any of its windows, which is the usual answer.
    group: list[tuple[int, int]] = []
    for window in [*windows, None]:
        if window is not None and group and window[0] < group[-1][1]:
            group.append(window)
            continue
        if group and _group_matches(text, group, lowered):
            return True
        group = [window] if window is not None else []
    return False


def _group_matches(text: str, group: list[tuple[int, int]], lowered: bool) -> bool:
    lo, hi = group[0][0], group[-1][1]
    if not lowered:
        return bool(_INSTRUCTION.search(text, lo, hi)) and any(
            _INSTRUCTION.search(text, a, b) for a, b in group
        )
    base = max(lo - 1, 0)
    stretch = text[base:hi].lower()
    return bool(_INSTRUCTION_LOWERED.search(stretch, lo - base)) and any(
        _INSTRUCTION_LOWERED.search(stretch, a - base, b - base) for a, b in group
    )


# Characters with no glyph that can carry a hidden message: every format control
# (Unicode category Cf) except the soft hyphen, which real typesetting uses freely.
BULK_INVISIBLE = 20


@cache
def _format_controls() -> tuple[np.ndarray, list[tuple[int, int]]]:
    """Format controls as a BMP lookup table and the ranges beyond it."""
    points = [cp for cp in range(0x110000) if unicodedata.category(chr(cp)) == "Cf" and cp != 0xAD]
    table = np.zeros(0x10000, dtype=bool)
    table[[cp for cp in points if cp < 0x10000]] = True
    wide: list[tuple[int, int]] = []
    for cp in (cp for cp in points if cp >= 0x10000):
        if wide and wide[-1][1] == cp - 1:
            wide[-1] = (wide[-1][0], cp)
        else:
            wide.append((cp, cp))
    return table, wide


def prepare() -> None:
    """Build the table now: a server calls this before its first request (a scan of every
    code point), a command that never scans a page does not pay for it at all."""
    _format_controls()


def _invisible_count(text: str) -> int:
    if text.isascii():
        return 0  # no format control is ASCII
    codes = codepoints(text)
    table, wide = _format_controls()
    if codes.dtype != np.uint32:
        return int(np.count_nonzero(np.take(table, codes)))
    count = int(np.count_nonzero(np.take(table, codes & 0xFFFF) & (codes < 0x10000)))
    return count + sum(int(np.count_nonzero((codes >= a) & (codes <= b))) for a, b in wide)


def _has_tag_characters(text: str) -> bool:
    if text.isascii():
        return False
    codes = codepoints(text)
    return codes.dtype == np.uint32 and bool(((codes >= 0xE0000) & (codes <= 0xE007F)).any())


def injection_flags(visible_text: str, hidden_text: str = "") -> list[str]:
    """Codes for text aimed at agents, in a fixed order; an empty list means none found."""
    flags: list[str] = []
    if _has_instructions(visible_text):
        flags.append(INSTRUCTIONS_IN_TEXT)
    if hidden_text and _has_instructions(hidden_text):
        flags.append(INSTRUCTIONS_IN_HIDDEN_TEXT)
    if _invisible_count(visible_text) + _invisible_count(hidden_text) >= BULK_INVISIBLE:
        flags.append(INVISIBLE_CHARACTERS)
    if _has_tag_characters(visible_text) or _has_tag_characters(hidden_text):
        flags.append(TAG_CHARACTERS)
    return flags
