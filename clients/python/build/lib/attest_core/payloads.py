"""Typed receipt claims: exactly what a receipt signs per page and per result, never quote text."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from attest_core.canonical import canonical_json

# Bumped whenever the meaning or shape of a signed field changes.
PAYLOAD_VERSION = 1

_SHA256_HEX = re.compile(r"[0-9a-f]{64}")


def quote_sha256(quote: str) -> str:
    """SHA-256 (hex) of the quote's UTF-8 bytes exactly as the caller sent it.

    The receipt carries this digest instead of the quote, so whoever holds the quote
    can check it while the receipt itself discloses nothing of it.
    """
    return hashlib.sha256(quote.encode("utf-8")).hexdigest()


def _check_sha256(name: str, value: str | None, *, optional: bool) -> None:
    if value is None and optional:
        return
    if not isinstance(value, str) or not _SHA256_HEX.fullmatch(value):
        raise ValueError(f"{name} must be a lowercase hex SHA-256, got {value!r}")


def _check_json(name: str, value: Any) -> None:
    """Fail where the claims are built, not later at signing, on a value JSON cannot carry."""
    try:
        canonical_json(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"{name} must hold JSON values only (str, numbers, lists...): {exc}"
        ) from exc


def _check_offset(name: str, value: Any) -> None:
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
        raise ValueError(f"{name} must be a non-negative integer or None, got {value!r}")


def _check_span(owner: str, start: Any, end: Any) -> None:
    _check_offset(f"{owner}.start", start)
    _check_offset(f"{owner}.end", end)
    if (start is None) != (end is None) or (start is not None and end < start):
        raise ValueError(f"{owner} needs both start and end with start <= end")


@dataclass(frozen=True)
class PassageClaims:
    """One passage offered for a paraphrased claim: its span and score."""

    start: int
    end: int
    score: float
    pdf_page: int | None = None
    pdf_page_end: int | None = None

    def __post_init__(self) -> None:
        _check_span("passage", self.start, self.end)

    def as_dict(self) -> dict[str, Any]:
        return {
            "start": self.start,
            "end": self.end,
            "score": self.score,
            "pdf_page": self.pdf_page,
            "pdf_page_end": self.pdf_page_end,
        }


@dataclass(frozen=True)
class PageClaims:
    """What the receipt signs about one fetched page (one entry per distinct URL)."""

    url: str
    final_url: str | None
    http_status: int | None
    content_kind: str
    content_sha256: str | None
    normalised_sha256: str | None
    evidence: Mapping[str, Any] = field(default_factory=dict)
    doi: str | None = None
    doi_status: str | None = None
    retracted: bool | None = None

    def __post_init__(self) -> None:
        _check_sha256("content_sha256", self.content_sha256, optional=True)
        _check_sha256("normalised_sha256", self.normalised_sha256, optional=True)
        if not isinstance(self.evidence, Mapping):
            raise TypeError("evidence must be a mapping")
        _check_json("evidence", self.evidence)

    def as_dict(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "final_url": self.final_url,
            "http_status": self.http_status,
            "content_kind": self.content_kind,
            "content_sha256": self.content_sha256,
            "normalised_sha256": self.normalised_sha256,
            "evidence": dict(self.evidence),
            "doi": self.doi,
            "doi_status": self.doi_status,
            "retracted": self.retracted,
        }


@dataclass(frozen=True)
class ResultClaims:
    """What the receipt signs about one quote or claim: the verdict, where, never the words."""

    page: int
    quote_sha256: str
    mode: str
    match: str
    score: float | None
    start: int | None
    end: int | None
    pdf_page: int | None = None
    pdf_page_end: int | None = None
    scorer: str | None = None
    passages: list[PassageClaims] | None = None

    def __post_init__(self) -> None:
        _check_sha256("quote_sha256", self.quote_sha256, optional=False)
        _check_offset("page", self.page)
        _check_span("result", self.start, self.end)
        for passage in self.passages or ():
            if not isinstance(passage, PassageClaims):
                raise TypeError("passages must be PassageClaims")

    def as_dict(self) -> dict[str, Any]:
        return {
            "page": self.page,
            "quote_sha256": self.quote_sha256,
            "mode": self.mode,
            "match": self.match,
            "score": self.score,
            "start": self.start,
            "end": self.end,
            "pdf_page": self.pdf_page,
            "pdf_page_end": self.pdf_page_end,
            "scorer": self.scorer,
            "passages": None
            if self.passages is None
            else [passage.as_dict() for passage in self.passages],
        }


def format_issued_at(moment: datetime) -> str:
    """RFC 3339 in UTC with milliseconds, e.g. 2026-10-09T14:19:34.903Z."""
    if moment.tzinfo is None:
        raise ValueError("issued_at must be timezone-aware")
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


@dataclass(frozen=True)
class ReceiptClaims:
    """The whole signed statement for one API answer."""

    issuer: str
    issued_at: datetime
    route: str
    request_id: str
    tier: str
    pages: list[PageClaims]
    results: list[ResultClaims]
    extra: Mapping[str, Any] = field(default_factory=dict)
    client_request_id: str | None = None  # the caller's X-Request-ID; request_id is ours

    def __post_init__(self) -> None:
        _check_json("extra", self.extra)
        for result in self.results:
            if result.page >= len(self.pages):
                raise ValueError(f"result points at page {result.page}, have {len(self.pages)}")

    def as_dict(self) -> dict[str, Any]:
        # iss and iat are the registered JWT names, so generic JOSE tools read them too.
        return {
            "v": PAYLOAD_VERSION,
            "iss": self.issuer,
            "iat": int(self.issued_at.timestamp()),
            "issued_at": format_issued_at(self.issued_at),
            "route": self.route,
            "request_id": self.request_id,
            "client_request_id": self.client_request_id,
            "tier": self.tier,
            "pages": [page.as_dict() for page in self.pages],
            "results": [result.as_dict() for result in self.results],
            "extra": dict(self.extra),
        }

    def to_bytes(self) -> bytes:
        return canonical_json(self.as_dict())
