"""Check a receipt offline, and compare its signed hashes and offsets with text or quotes.

A receipt signs hashes and offsets, never the quote, so what can be checked depends on
what the caller holds:

- the receipt and a JWKS: the signature, the key, and that the claims are well formed;
- a page's normalised text: that its SHA-256 is the page's ``normalised_sha256``, and
  that every signed span (each result's and each passage's) lies inside it;
- the quote as sent (its SHA-256 must be a result's ``quote_sha256``): the matcher's own
  rules re-applied to what the offsets hold, on the quote normalised as the service
  normalises it. ``exact``: ``text[start:end]`` is the quote, ignoring case (case
  sensitivity is not signed; with it on, the two are equal outright). ``fuzzy``: the quote
  is not on the page word for word (that would be ``exact``) and the span's similarity to
  it is the signed score, with or without case. ``none``: the quote is not on the page
  word for word. ``passages``: recomputing them with the signed scorer gives the signed
  spans and scores;
- without the quote, an exact span is tied to the signed digest only when
  ``sha256(text[start:end])`` is ``quote_sha256``: true when the quote was sent already
  normalised and in the page's case. Otherwise the quote is needed, and the check says so.

``pdf_page`` needs the PDF's page map and is not checked here.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from joserfc.jwk import OKPKey
from rapidfuzz.distance import Levenshtein

from receipts.core.check_answer import answer_mismatches
from receipts.core.jws import ReceiptRefused, check_compact
from receipts.core.payloads import (
    PAYLOAD_VERSION,
    PageClaims,
    PassageClaims,
    ResultClaims,
    quote_sha256,
)
from verification.engine.normalise import normalise
from verification.engine.passages import SCORER, ClaimHasNoWords, find_passages


@dataclass(frozen=True)
class FailureKind:
    name: str
    exit_code: int
    meaning: str


# The checker's exit status names what failed first; 0 means every check given held.
FAILURE_KINDS: tuple[FailureKind, ...] = (
    FailureKind(
        "signature",
        1,
        "The receipt is not intact: not a compact JWS, not an Attest receipt, or its "
        "signature does not match its header and payload.",
    ),
    FailureKind(
        "usage",
        2,
        "The checker could not run: a file it cannot read, a JWKS it cannot use, a bad option.",
    ),
    FailureKind(
        "key",
        3,
        "The receipt names no key, a key the JWKS does not hold, or an algorithm other than EdDSA.",
    ),
    FailureKind(
        "payload",
        4,
        "The signature holds but the signed claims are not a receipt this checker reads "
        "(malformed, or a newer payload version).",
    ),
    FailureKind(
        "text",
        5,
        "A text given is not the normalised text of any page the receipt signs.",
    ),
    FailureKind(
        "offsets",
        6,
        "A signed span lies outside its page's text, or what it holds is not what the "
        "receipt says about the quote.",
    ),
    FailureKind("quote", 7, "A quote given is not one the receipt signs."),
    FailureKind(
        "answer",
        8,
        "The API answer around the receipt says something the receipt does not sign.",
    ),
)
EXIT_CODES = {kind.name: kind.exit_code for kind in FAILURE_KINDS}

# check_compact's reasons, by what failed. Offline, "unknown" means unknown to the JWKS given.
_REFUSAL_KINDS = {
    "malformed": "signature",
    "too_large": "signature",
    "wrong_type": "signature",
    "bad_signature": "signature",
    "unsupported_algorithm": "key",
    "missing_kid": "key",
    "unknown_key": "key",
    "malformed_payload": "payload",
}
_OFFLINE_MESSAGES = {
    "unknown_key": (
        "The receipt names key {kid}, which the JWKS given does not hold: fetch the current "
        "JWKS, or the receipt was not signed by that service."
    ),
    "bad_signature": (
        "The signature does not match the header and payload: the receipt was altered, or "
        "key {kid} did not sign it."
    ),
}

Status = Literal["ok", "fail", "skip"]
# Verdicts that come with offsets; "none" comes without.
_LOCATED = frozenset({"exact", "fuzzy", "passages"})


@dataclass(frozen=True)
class Finding:
    """One check: what it was about, whether it held (``skip``: not checkable with what was
    given), and a sentence saying so."""

    status: Status
    kind: str
    reason: str
    message: str


@dataclass
class CheckReport:
    kid: str | None
    header: dict[str, Any] | None
    claims: dict[str, Any] | None
    findings: list[Finding] = field(default_factory=list)

    @property
    def failures(self) -> list[Finding]:
        return [finding for finding in self.findings if finding.status == "fail"]

    @property
    def exit_code(self) -> int:
        failures = self.failures
        return EXIT_CODES[failures[0].kind] if failures else 0


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def span_inside(start: Any, end: Any, length: int) -> bool:
    """Both offsets absent, or integers with 0 <= start <= end <= length."""
    if start is None and end is None:
        return True
    return isinstance(start, int) and isinstance(end, int) and 0 <= start <= end <= length


def _known(cls: type, data: Mapping[str, Any]) -> dict[str, Any]:
    """The members of ``data`` that ``cls`` has fields for: a newer receipt may add claims."""
    names = {f.name for f in dataclasses.fields(cls)}
    return {key: value for key, value in data.items() if key in names}


def claims_problems(claims: Mapping[str, Any]) -> Iterator[str]:
    """Why the signed claims are not a receipt this checker can read, one reason at a time.

    Pages and results are rebuilt through the payload classes, so they meet the very rules
    the service signs them under (hex digests, ordered spans, page indexes in range).
    """
    version = claims.get("v")
    if version != PAYLOAD_VERSION:
        yield f"payload version {version!r}; this checker reads version {PAYLOAD_VERSION}"
        return
    pages, results = claims.get("pages"), claims.get("results")
    if not isinstance(pages, list) or not isinstance(results, list):
        yield "the claims have no pages and results lists"
        return
    for index, page in enumerate(pages):
        try:
            PageClaims(**_known(PageClaims, page))
        except (TypeError, ValueError, AttributeError) as exc:
            yield f"pages[{index}]: {exc}"
    for index, result in enumerate(results):
        try:
            passages = result.get("passages")
            ResultClaims(
                **{**_known(ResultClaims, result), "passages": None},
            )
            for passage in passages or ():
                PassageClaims(**_known(PassageClaims, passage))
            if passages is not None and not isinstance(passages, list):
                raise ValueError("passages must be a list or null")
        except (TypeError, ValueError, AttributeError) as exc:
            yield f"results[{index}]: {exc}"
            continue
        if not 0 <= result["page"] < len(pages):
            yield f"results[{index}] points at page {result['page']}; the receipt has {len(pages)}"
        located = result.get("match") in _LOCATED
        if located != (result.get("start") is not None):
            yield f"results[{index}]: match {result.get('match')!r} with start {result['start']!r}"


def check_offline(
    receipt: str,
    *,
    public_keys: Mapping[str, OKPKey],
    texts: Sequence[tuple[str, str]] = (),
    quotes: Sequence[str] = (),
    answer: Mapping[str, Any] | None = None,
) -> CheckReport:
    """Every check the receipt and what the caller holds allow.

    ``texts`` are (label, normalised page text) pairs, each matched to the pages whose
    ``normalised_sha256`` it has; ``quotes`` are quotes exactly as sent; ``answer`` is
    the API answer the receipt came in (a ``/v1/fetch`` answer's ``text`` is used too).
    """
    try:
        checked = check_compact(receipt, public_keys=public_keys)
    except ReceiptRefused as refused:
        message = _OFFLINE_MESSAGES.get(refused.reason, refused.message)
        finding = Finding(
            "fail",
            _REFUSAL_KINDS[refused.reason],
            refused.reason,
            message.format(kid=refused.kid),
        )
        return CheckReport(kid=refused.kid, header=None, claims=None, findings=[finding])
    claims = checked.claims
    report = CheckReport(kid=checked.kid, header=checked.header, claims=claims)
    report.findings.append(
        Finding("ok", "signature", "signature", f"The signature is valid (key {checked.kid}).")
    )
    problems = list(claims_problems(claims))
    if problems:
        report.findings.append(Finding("fail", "payload", "malformed_payload", problems[0]))
        return report
    if answer is not None:
        report.findings.extend(_answer_findings(answer, claims))
        if isinstance(answer.get("text"), str):
            texts = [*texts, ("the answer's text", answer["text"])]
    page_texts = {}
    for label, text in texts:
        finding, pages = _match_text(label, text, claims["pages"])
        report.findings.append(finding)
        page_texts.update(dict.fromkeys(pages, text))
    quote_of: dict[int, str] = {}
    for quote in quotes:
        finding, indexes = _match_quote(quote, claims["results"])
        report.findings.append(finding)
        quote_of.update(dict.fromkeys(indexes, quote))
    for index, result in enumerate(claims["results"]):
        report.findings.extend(
            _result_findings(index, result, page_texts.get(result["page"]), quote_of.get(index))
        )
    return report


def _answer_findings(answer: Mapping[str, Any], claims: Mapping[str, Any]) -> list[Finding]:
    mismatches = list(answer_mismatches(answer, claims))
    if not mismatches:
        return [
            Finding(
                "ok",
                "answer",
                "answer",
                "Every field the answer shares with the receipt says what the receipt signs.",
            )
        ]
    return [Finding("fail", "answer", "answer_mismatch", line) for line in mismatches]


def _match_text(label: str, text: str, pages: list[dict[str, Any]]) -> tuple[Finding, list[int]]:
    digest = text_sha256(text)
    matched = [i for i, page in enumerate(pages) if page.get("normalised_sha256") == digest]
    if matched:
        names = ", ".join(str(i) for i in matched)
        return Finding(
            "ok",
            "text",
            "text",
            f"{label} is the normalised text of page {names} (SHA-256 {digest[:16]}...).",
        ), matched
    signed = [i for i, page in enumerate(pages) if page.get("normalised_sha256")]
    if len(signed) == 1:
        hint = f"page {signed[0]} signs {pages[signed[0]]['normalised_sha256'][:16]}..."
    else:
        hint = f"no page of the {len(pages)} signs that hash"
    return Finding(
        "fail",
        "text",
        "text_mismatch",
        f"{label} has SHA-256 {digest[:16]}...; {hint}: the text was altered or is another page's.",
    ), []


def _match_quote(quote: str, results: list[dict[str, Any]]) -> tuple[Finding, list[int]]:
    digest = quote_sha256(quote)
    matched = [i for i, result in enumerate(results) if result["quote_sha256"] == digest]
    shown = _excerpt(quote)
    if matched:
        names = ", ".join(str(i) for i in matched)
        return Finding(
            "ok", "quote", "quote", f"The quote {shown} is signed in result {names}."
        ), matched
    return Finding(
        "fail",
        "quote",
        "quote_not_signed",
        f"The quote {shown} has SHA-256 {digest[:16]}..., which no result signs (it must be "
        "byte for byte the quote that was sent).",
    ), []


def _excerpt(text: str, limit: int = 60) -> str:
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


def _spans(result: Mapping[str, Any]) -> Iterator[tuple[str, Any, Any]]:
    yield "", result.get("start"), result.get("end")
    for number, passage in enumerate(result.get("passages") or ()):
        yield f" passage {number}", passage["start"], passage["end"]


def _result_findings(
    index: int, result: Mapping[str, Any], text: str | None, quote: str | None
) -> list[Finding]:
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
            return fail(f"text[{start}:{end}] reads {_excerpt(span)}, not the quote.")
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


def compare_with_claims(
    claims: dict[str, Any], *, text: str | None, quote: str | None, page: int
) -> dict[str, Any]:
    """What agrees between the signed claims and the caller's page text and/or quote.

    ``text`` is the page's normalised text (the one ``normalised_sha256`` covers) and
    ``page`` its index in the receipt's pages. With ``text`` the answer says whether the
    hash matches and, per result on that page, whether the offsets fall inside the text
    and which characters they cover. With ``quote`` it lists the results whose signed
    ``quote_sha256`` is that quote's digest.
    """
    pages = claims.get("pages") if isinstance(claims.get("pages"), list) else []
    results = claims.get("results") if isinstance(claims.get("results"), list) else []
    checks: dict[str, Any] = {}
    if text is not None:
        signed_page = pages[page] if 0 <= page < len(pages) else None
        checks["page"] = page
        checks["page_in_receipt"] = isinstance(signed_page, dict)
        checks["normalised_sha256"] = isinstance(signed_page, dict) and signed_page.get(
            "normalised_sha256"
        ) == text_sha256(text)
        spans = []
        for index, result in enumerate(results):
            if not isinstance(result, dict) or result.get("page") != page:
                continue
            passages = result.get("passages") or []
            fits = span_inside(result.get("start"), result.get("end"), len(text)) and all(
                isinstance(p, dict) and span_inside(p.get("start"), p.get("end"), len(text))
                for p in passages
            )
            start, end = result.get("start"), result.get("end")
            spans.append(
                {
                    "result": index,
                    "offsets_in_text": fits,
                    "span": text[start:end] if fits and start is not None else None,
                }
            )
        checks["results"] = spans
    if quote is not None:
        digest = quote_sha256(quote)
        matching = [
            index
            for index, result in enumerate(results)
            if isinstance(result, dict) and result.get("quote_sha256") == digest
        ]
        checks["quote_sha256"] = bool(matching)
        checks["quote_results"] = matching
    return checks
