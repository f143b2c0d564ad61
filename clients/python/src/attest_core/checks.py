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
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from joserfc.jwk import OKPKey

from attest_core.check_answer import answer_mismatches
from attest_core.check_findings import (
    CheckReport,
    Finding,
    excerpt,
    span_inside,
    text_sha256,
)
from attest_core.check_spans import result_findings
from attest_core.jws import ReceiptRefused, check_compact
from attest_core.payloads import (
    PAYLOAD_VERSION,
    PageClaims,
    PassageClaims,
    ResultClaims,
    quote_sha256,
)

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
# Verdicts that come with offsets; "none" comes without.
_LOCATED = frozenset({"exact", "fuzzy", "passages"})


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
            ResultClaims(**{**_known(ResultClaims, result), "passages": None})
            passages = result.get("passages")
            if passages is not None and not isinstance(passages, list):
                raise ValueError("passages must be a list or null")
            for passage in passages or ():
                PassageClaims(**_known(PassageClaims, passage))
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
            result_findings(index, result, page_texts.get(result["page"]), quote_of.get(index))
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
    shown = excerpt(quote)
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
    pages = claims["pages"] if isinstance(claims.get("pages"), list) else []
    results = claims["results"] if isinstance(claims.get("results"), list) else []
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
