"""The words around a found span, as the matcher and the passage finder both show them."""

from __future__ import annotations

CONTEXT_CHARS = 80


def context_window(text: str, start: int, end: int, width: int = CONTEXT_CHARS) -> str:
    """``text[start:end]`` with about ``width`` characters each side, cut at word boundaries."""
    left = max(start - width, 0)
    if left > 0:
        space = text.find(" ", left - 1, start)
        left = space + 1 if space != -1 else left
    right = min(end + width, len(text))
    if right < len(text):
        space = text.rfind(" ", end, right + 1)
        right = space if space != -1 else right
    window = text[left:right].strip(" ")
    return f"{'...' if left > 0 else ''}{window}{'...' if right < len(text) else ''}"
