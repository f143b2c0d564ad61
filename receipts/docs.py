"""What receipts registers for the docs pages: the claims and a limit (the check route's errors
are registered by ``receipts.route_errors``, imported here for discovery)."""

from __future__ import annotations

import dataclasses

from attest.registry import (
    Limit,
    register_limits,
    register_table,
)
from attest_core.jws import MAX_RECEIPT_CHARS
from attest_core.payloads import PageClaims, PassageClaims, ResultClaims
from receipts import route_errors  # noqa: F401 (registers the check route's errors)

# What each signed claim means, one line each; every claim of the payloads has its line.
CLAIMS_DOC = {
    "url": "the URL asked for",
    "final_url": "the URL the page came from, after redirects",
    "http_status": "the page's HTTP status",
    "content_kind": "the verdict on the page (real, bot_wall, ...)",
    "content_sha256": "SHA-256 of the bytes received",
    "normalised_sha256": "SHA-256 of the normalised text the offsets point into",
    "evidence": "network facts: address, redirects, content type, bytes",
    "doi": "the DOI found on the page",
    "doi_status": "the crossref block's status: found, not_found, skipped; null without a lookup",
    "retracted": "true when Crossref lists a retraction, withdrawal or removal; null if unknown",
    "page": "index of the result's page in pages",
    "quote_sha256": "SHA-256 of the quote exactly as sent; never the quote itself",
    "mode": "fuzzy, exact or passages",
    "match": "the verdict",
    "score": "the similarity or passage score",
    "start": "code-point offset into the normalised text",
    "end": "end of the span (exclusive)",
    "pdf_page": "1-based PDF page where the span starts",
    "pdf_page_end": "1-based PDF page where it ends",
    "scorer": "the passages scorer",
    "passages": "each passage's start, end, score and PDF pages",
}


def claim_rows(cls: type) -> list[tuple[str, str]]:
    return [(f.name, CLAIMS_DOC[f.name]) for f in dataclasses.fields(cls)]


def _receipts() -> list[Limit]:
    return [
        Limit(
            "Receipt size checked",
            f"{MAX_RECEIPT_CHARS:,} characters",
            "valid false, reason too_large",
        )
    ]


register_limits("Payments and receipts", _receipts)
register_table("page claims", lambda: claim_rows(PageClaims))
register_table("result claims", lambda: claim_rows(ResultClaims))
register_table("passage claims", lambda: claim_rows(PassageClaims))
