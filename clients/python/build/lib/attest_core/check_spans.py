"""What a signed span holds: the matcher's own rules applied again to the text at the offsets.

Case sensitivity and the fuzzy threshold are not signed, so each rule accepts what either
setting could give: a check that cannot fail a genuine receipt, and fails a span that no
setting could have produced for this quote on this text.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from rapidfuzz.distance import Levenshtein

from attest_core.check_findings import Finding, excerpt, span_inside, text_sha256
from attest_core.normalise import normalise
from attest_core.passages import SCORER, ClaimHasNoWords, find_passages


def _spans(result: Mapping[str, Any]) -> Iterator[tuple[str, Any, Any]]:
    yield "", result.get("start"), result.get("end")
    for number, passage in enumerate(result.get("passages") or ()):
        yield f" passage {number}", passage["start"], passage["end"]


def result_findings(
    index: int, result: Mapping[str, Any], text: str | None, quote: str | None
) -> list[Finding]:
    """The checks of one signed result, given its page's text and its quote when known."""
    label = f"result {index}"
    page = result["page"]
    if text is None:
        if quote is None:
            return []
        return [
            Finding(
                "skip",
                "offsets",
                "no_text",
                f"{label}: offsets not checked; give page {page}'s normalised text.",
            )
        ]
    outside = [
        f"{label}{name}: [{start}:{end}]"
        for name, start, end in _spans(result)
        if not span_inside(start, end, len(text))
    ]
    if outside:
        return [
            Finding(
                "fail",
                "offsets",
                "offsets_outside_text",
                f"{outside[0]} lies outside page {page}'s text ({len(text)} characters).",
            )
        ]
    findings = [
        Finding(
            "ok",
            "offsets",
            "offsets",
            f"{label}: every signed span lies inside page {page}'s text.",
        )
    ]
    if quote is None:
        findings.append(_without_quote(label, result, text))
    else:
        findings.append(_with_quote(label, result, text, normalise(quote).text))
    return findings


def _without_quote(label: str, result: Mapping[str, Any], text: str) -> Finding:
    start, end = result["start"], result["end"]
    if result["match"] == "exact" and text_sha256(text[start:end]) == result["quote_sha256"]:
        return Finding(
            "ok",
            "offsets",
            "span_is_quote",
            f"{label}: text[{start}:{end}] is, byte for byte, the quote whose SHA-256 is signed.",
        )
    return Finding(
        "skip",
        "offsets",
        "quote_needed",
        f"{label}: what the offsets hold can be tied to the signed quote only with the quote; "
        "give it.",
    )


def _with_quote(label: str, result: Mapping[str, Any], text: str, quote: str) -> Finding:
    match, start, end = result["match"], result["start"], result["end"]

    def fail(message: str) -> Finding:
        return Finding("fail", "offsets", "span_not_quote", f"{label}: {message}")

    def held(message: str) -> Finding:
        return Finding("ok", "offsets", "span_holds_quote", f"{label}: {message}")

    if result["mode"] == "passages":
        return _passages_finding(label, result, text, quote)
    if match in ("fuzzy", "none") and quote in text:
        at = text.index(quote)
        return fail(
            f"the quote is on the page word for word at {at}, yet the receipt says {match}."
        )
    if match == "exact":
        span = text[start:end]
        if span.casefold() != quote.casefold():
            return fail(f"text[{start}:{end}] reads {excerpt(span)}, not the quote.")
        return held(f"text[{start}:{end}] is the quote (after normalisation).")
    if match == "fuzzy":
        span = text[start:end]
        scores = {
            round(Levenshtein.normalized_similarity(quote, span), 3),
            round(Levenshtein.normalized_similarity(quote.casefold(), span.casefold()), 3),
        }
        if result["score"] not in scores:
            shown = " or ".join(str(score) for score in sorted(scores))
            return fail(
                f"text[{start}:{end}] scores {shown} against the quote, but the "
                f"receipt signs {result['score']}."
            )
        return held(f"text[{start}:{end}] scores {result['score']} against the quote, as signed.")
    if match == "none":
        return held("the quote does not occur word for word on the page, as none requires.")
    return Finding(
        "skip",
        "offsets",
        "unknown_verdict",
        f"{label}: this checker does not know match {match!r}.",
    )


def _passages_finding(label: str, result: Mapping[str, Any], text: str, quote: str) -> Finding:
    if result.get("scorer") != SCORER:
        return Finding(
            "skip",
            "offsets",
            "other_scorer",
            f"{label}: passages were scored by {result.get('scorer')!r}; this checker "
            f"recomputes {SCORER} only.",
        )
    try:
        found = find_passages(text, quote)
    except ClaimHasNoWords:
        found = None
    signed = (
        result["match"],
        result["score"],
        result["start"],
        result["end"],
        [(p["start"], p["end"], p["score"]) for p in result.get("passages") or ()],
    )
    again = (
        (None,)
        if found is None
        else (
            found.match,
            found.score,
            found.start,
            found.end,
            [(p.start, p.end, p.score) for p in found.passages],
        )
    )
    if again != signed:
        return Finding(
            "fail",
            "offsets",
            "passages_differ",
            f"{label}: {SCORER} finds other passages for this quote on this text than the "
            "receipt signs.",
        )
    return Finding(
        "ok",
        "offsets",
        "passages_recomputed",
        f"{label}: {SCORER} finds the signed passages for this quote on this text.",
    )
