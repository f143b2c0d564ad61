"""Compare a verified receipt's signed hashes and offsets with text or a quote the caller holds."""

from __future__ import annotations

import hashlib
from typing import Any

from receipts.core.payloads import quote_sha256


def _span_fits(item: Any, length: int) -> bool:
    start, end = item.get("start"), item.get("end")
    if start is None and end is None:
        return True
    return isinstance(start, int) and isinstance(end, int) and 0 <= start <= end <= length


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
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        checks["page"] = page
        checks["page_in_receipt"] = isinstance(signed_page, dict)
        checks["normalised_sha256"] = (
            isinstance(signed_page, dict) and signed_page.get("normalised_sha256") == digest
        )
        spans = []
        for index, result in enumerate(results):
            if not isinstance(result, dict) or result.get("page") != page:
                continue
            passages = result.get("passages") or []
            fits = _span_fits(result, len(text)) and all(
                isinstance(p, dict) and _span_fits(p, len(text)) for p in passages
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
