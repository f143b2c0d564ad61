"""Sample claims and helpers shared by the receipt tests."""

from __future__ import annotations

import base64
import hashlib
import json

from receipts import services
from receipts.payloads import PageClaims, PassageClaims, ResultClaims, quote_sha256

QUOTE = "These domains may be used as illustrative examples in documents"
PAGE_TEXT = (
    "Example Domains. As described in RFC 2606 and RFC 6761, a number of domains such as "
    "example.com are reserved. These domains may be used as illustrative examples in "
    "documents without prior coordination with us."
)


def sample_pages() -> list[PageClaims]:
    return [
        PageClaims(
            url="https://example.org/help",
            final_url="https://example.org/help/",
            http_status=200,
            content_kind="real",
            content_sha256=hashlib.sha256(b"<html>...</html>").hexdigest(),
            normalised_sha256=hashlib.sha256(PAGE_TEXT.encode()).hexdigest(),
            evidence={"ip": "93.184.215.14", "redirects": ["https://example.org/help"]},
            doi="10.1234/example",
            doi_status="found",
            retracted=False,
        ),
        PageClaims(
            url="https://example.org/missing",
            final_url="https://example.org/missing",
            http_status=404,
            content_kind="http_error",
            content_sha256=None,
            normalised_sha256=None,
            evidence={"ip": "93.184.215.14"},
        ),
    ]


def sample_results(quote: str = QUOTE) -> list[ResultClaims]:
    start = PAGE_TEXT.index(quote) if quote in PAGE_TEXT else 0
    return [
        ResultClaims(
            page=0,
            quote_sha256=quote_sha256(quote),
            mode="fuzzy",
            match="exact",
            score=1.0,
            start=start,
            end=start + len(quote),
        ),
        ResultClaims(
            page=0,
            quote_sha256=quote_sha256("The reserved names are listed"),
            mode="passages",
            match="passages",
            score=0.583,
            start=0,
            end=16,
            scorer="lexical-v2",
            passages=[PassageClaims(0, 16, 0.583), PassageClaims(17, 40, 0.217, 2, 3)],
        ),
        ResultClaims(
            page=1,
            quote_sha256=quote_sha256(quote),
            mode="fuzzy",
            match="none",
            score=None,
            start=None,
            end=None,
        ),
    ]


def issue_sample(quote: str = QUOTE, **overrides) -> str:
    arguments = {
        "route": "verify/citations",
        "request_id": "req-1",
        "tier": "paid",
        "pages": sample_pages(),
        "results": sample_results(quote),
        "extra": {"summary": {"exact": 1, "passages": 1, "none": 1}},
    }
    arguments.update(overrides)
    return services.issue_receipt(**arguments).receipt


def decode_part(token: str, index: int) -> dict:
    part = token.split(".")[index]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
