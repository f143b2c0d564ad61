"""Flags for page text aimed at software agents rather than at the human reader."""

from __future__ import annotations

import re
import unicodedata

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
# 10 MB page costs a few substring scans rather than a regex at every position.
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


def _has_instructions(text: str) -> bool:
    lowered = text.lower()
    hits = 0
    for trigger in _TRIGGERS:
        at = lowered.find(trigger)
        while at != -1 and hits < _MAX_HITS:
            hits += 1
            if _INSTRUCTION.search(text, max(0, at - _WINDOW), at + _WINDOW):
                return True
            at = lowered.find(trigger, at + 1)
    return False


# Characters with no glyph that can carry a hidden message: every format control
# (Unicode category Cf) except the soft hyphen, which real typesetting uses freely.
BULK_INVISIBLE = 20


def _format_controls() -> re.Pattern[str]:
    points = [cp for cp in range(0x110000) if unicodedata.category(chr(cp)) == "Cf" and cp != 0xAD]
    ranges: list[list[int]] = []
    for cp in points:
        if ranges and ranges[-1][1] == cp - 1:
            ranges[-1][1] = cp
        else:
            ranges.append([cp, cp])
    # Ranges, not single characters: a class of 20 ranges scans ten times faster.
    body = "".join(
        re.escape(chr(a)) + ("" if a == b else "-" + re.escape(chr(b))) for a, b in ranges
    )
    return re.compile(f"[{body}]")


_INVISIBLE = _format_controls()
_TAG_CHARACTERS = re.compile("[\U000e0000-\U000e007f]")


def injection_flags(visible_text: str, hidden_text: str = "") -> list[str]:
    """Codes for text aimed at agents, in a fixed order; an empty list means none found."""
    flags: list[str] = []
    if _has_instructions(visible_text):
        flags.append(INSTRUCTIONS_IN_TEXT)
    if hidden_text and _has_instructions(hidden_text):
        flags.append(INSTRUCTIONS_IN_HIDDEN_TEXT)
    invisible = 0
    for text in (visible_text, hidden_text):
        if text.isascii():
            continue
        for _ in _INVISIBLE.finditer(text):
            invisible += 1
            if invisible >= BULK_INVISIBLE:
                break
    if invisible >= BULK_INVISIBLE:
        flags.append(INVISIBLE_CHARACTERS)
    if any(not t.isascii() and _TAG_CHARACTERS.search(t) for t in (visible_text, hidden_text)):
        flags.append(TAG_CHARACTERS)
    return flags
