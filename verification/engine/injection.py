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
# Characters with no glyph that can carry a hidden message (format controls, tags).
BULK_INVISIBLE = 20


def _invisible(ch: str) -> bool:
    return unicodedata.category(ch) == "Cf" and ch not in "\u00ad"


def injection_flags(visible_text: str, hidden_text: str = "") -> list[str]:
    """Codes for text aimed at agents, in a fixed order; an empty list means none found."""
    flags: list[str] = []
    if _INSTRUCTION.search(visible_text):
        flags.append(INSTRUCTIONS_IN_TEXT)
    if hidden_text and _INSTRUCTION.search(hidden_text):
        flags.append(INSTRUCTIONS_IN_HIDDEN_TEXT)
    combined = visible_text + hidden_text
    invisible = sum(1 for ch in combined if _invisible(ch))
    if invisible >= BULK_INVISIBLE:
        flags.append(INVISIBLE_CHARACTERS)
    if any("\U000e0000" <= ch <= "\U000e007f" for ch in combined):
        flags.append(TAG_CHARACTERS)
    return flags
