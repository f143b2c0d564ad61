"""Take a receipt from what the caller saved, and compare an API answer with its signed claims.

An answer's body is not signed; only its ``receipt`` is. Whoever keeps a whole answer
can check that each field the answer shares with the claims says the same thing, so a
verdict or an offset edited after the fact shows.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

# Field of an answer's page -> the claim of the signed page it must equal.
PAGE_FIELDS = {
    "requested_url": "url",
    "url": "url",
    "final_url": "final_url",
    "http_status": "http_status",
    "content_kind": "content_kind",
    "content_sha256": "content_sha256",
    "normalised_sha256": "normalised_sha256",
    "doi": "doi",
}
# Field of a page's ``crossref`` block -> the claim of the signed page it must equal.
CROSSREF_FIELDS = {"doi": "doi", "status": "doi_status", "retracted": "retracted"}
# Fields of an answer's result that equal the signed result's claim of the same name.
RESULT_FIELDS = ("page", "match", "score", "start", "end", "pdf_page", "pdf_page_end", "scorer")
# Field of an answer's result -> the claim of its signed page (a citations batch repeats them).
RESULT_PAGE_FIELDS = {
    "url": "url",
    "final_url": "final_url",
    "http_status": "http_status",
    "content_kind": "content_kind",
    "normalised_sha256": "normalised_sha256",
}
PASSAGE_FIELDS = ("start", "end", "score", "pdf_page", "pdf_page_end")


class ReceiptInputError(ValueError):
    """What was given holds no receipt; the message says why."""


def read_receipt_input(raw: str) -> tuple[str, dict[str, Any] | None]:
    """(compact JWS, the whole answer or None) from a bare receipt or an API answer's JSON."""
    text = raw.strip()
    if not text.startswith("{"):
        if not text:
            raise ReceiptInputError("no receipt given: the input is empty")
        return text, None
    try:
        answer = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ReceiptInputError(f"the input starts like JSON but does not parse ({exc})") from None
    if not isinstance(answer, dict) or not isinstance(answer.get("receipt"), str):
        raise ReceiptInputError('the JSON has no "receipt" string: give an API answer or a receipt')
    return answer["receipt"], answer


def _items(answer: Mapping[str, Any], many: str, one: str) -> list[Any]:
    items = answer.get(many)
    if isinstance(items, list):
        return items
    if isinstance(answer.get(one), dict):
        return [answer[one]]
    return []


def _same(shown: Any, signed: Any) -> bool:
    # JSON has one number type: 1 and 1.0 are the same number, True is not 1.
    if isinstance(shown, bool) or isinstance(signed, bool):
        return shown is signed
    return bool(shown == signed)


def answer_mismatches(answer: Mapping[str, Any], claims: Mapping[str, Any]) -> Iterator[str]:
    """One line per field of the answer that disagrees with the signed claims."""
    pages, results = claims["pages"], claims["results"]
    if "tier" in answer and not _same(answer["tier"], claims.get("tier")):
        yield f"tier is {answer['tier']!r} but the receipt signs {claims.get('tier')!r}"
    shown_pages = _items(answer, "pages", "page")
    if shown_pages and len(shown_pages) != len(pages):
        yield f"the answer has {len(shown_pages)} pages, the receipt signs {len(pages)}"
    for index, (shown, signed) in enumerate(zip(shown_pages, pages, strict=False)):
        yield from _compare(f"page {index}", shown, signed, PAGE_FIELDS.items())
        yield from _crossref_mismatches(f"page {index}", shown, signed)
    shown_results = _items(answer, "results", "result")
    if shown_results and len(shown_results) != len(results):
        yield f"the answer has {len(shown_results)} results, the receipt signs {len(results)}"
    for index, (shown, signed) in enumerate(zip(shown_results, results, strict=False)):
        label = f"result {index}"
        yield from _compare(label, shown, signed, ((name, name) for name in RESULT_FIELDS))
        page = pages[signed["page"]]
        yield from _compare(label, shown, page, RESULT_PAGE_FIELDS.items())
        shown_passages = shown.get("passages") if isinstance(shown, dict) else None
        signed_passages = signed.get("passages") or []
        if isinstance(shown_passages, list):
            if len(shown_passages) != len(signed_passages):
                yield (
                    f"{label} shows {len(shown_passages)} passages, the receipt signs "
                    f"{len(signed_passages)}"
                )
            for number, (passage, claim) in enumerate(
                zip(shown_passages, signed_passages, strict=False)
            ):
                pairs = ((name, name) for name in PASSAGE_FIELDS)
                yield from _compare(f"{label} passage {number}", passage, claim, pairs)


def _crossref_mismatches(label: str, shown: Any, signed: Mapping[str, Any]) -> Iterator[str]:
    """The page's Crossref block against the signed DOI status: a block dropped from the
    answer (a retraction hidden) shows as much as one edited."""
    if not isinstance(shown, dict):
        return
    block = shown.get("crossref")
    if block is None:
        if signed.get("doi_status") is not None:
            yield (
                f"{label} shows no crossref block but the receipt signs DOI status "
                f"{signed['doi_status']!r} (retracted {signed.get('retracted')!r})"
            )
        return
    yield from _compare(f"{label} crossref", block, signed, CROSSREF_FIELDS.items())


def _compare(
    label: str, shown: Any, signed: Mapping[str, Any], pairs: Iterable[tuple[str, str]]
) -> Iterator[str]:
    if not isinstance(shown, dict):
        yield f"{label} is not a JSON object"
        return
    for field, claim in pairs:
        if field in shown and claim in signed and not _same(shown[field], signed[claim]):
            yield f"{label}: {field} is {shown[field]!r} but the receipt signs {signed[claim]!r}"
