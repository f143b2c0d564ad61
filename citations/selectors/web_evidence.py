"""Web evidence read: a quote Attest verified on a page, checked against its receipt.

The receipt is the proof. Admission checks its signature against the service's own keys
(retired keys included), that it came from a verifying route, that the quote's SHA-256
is the one signed for the chosen result, that the signed verdict is ``exact`` or
``fuzzy`` and that the page was ``real``. Resolve checks the signature and the quote
hash again on every request (``web_source_intact``), as message evidence re-reads bytes.

A later Crossref lookup of the page's DOI is the ``CrossrefAnswer`` row every
verification keeps for that DOI: when one was fetched after the receipt was issued, its
``retracted`` is what resolve shows as ``source_retracted``; until then, the signed one.
Resolve never asks Crossref itself.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

from attest.errors import InvalidRequest
from citations.models import Evidence, WebSource
from receipts.log import receipt_is_leaf
from receipts.payloads import quote_sha256
from verification.models import CrossrefAnswer, Verification

# The routes whose receipts vouch for a quote on a fetched page (not the free samples).
WEB_ROUTES = ("verify/quote", "verify/quotes", "verify/citations", "fetch")
ROUTE_FETCH = "fetch"
ADMITTED_VERDICTS = ("exact", "fuzzy")
REAL_PAGE = "real"

# The reasons a piece of web evidence is refused, in ``details.reason``.
RECEIPT_INVALID = "receipt_invalid"
QUOTE_MISMATCH = "quote_mismatch"
NO_MATCH = "no_match"
PAGE_NOT_REAL = "page_not_real"
REASONS = {
    RECEIPT_INVALID: "the receipt is not one this service signed for a verifying route, "
    "or `index` names no result of it",
    QUOTE_MISMATCH: "the quote's SHA-256 is not the one the receipt signed",
    NO_MATCH: "the signed verdict is not `exact` or `fuzzy` (for a fetch receipt: the "
    "quote is not in `text`)",
    PAGE_NOT_REAL: "the page's signed `content_kind` is not `real`",
}


@dataclass(frozen=True)
class WebQuoteIn:
    """One piece of web evidence as the caller sends it."""

    receipt: str
    quote: str
    index: int = 0
    text: str | None = None  # a fetch receipt's page text, where the quote is looked up
    position: int | None = None  # its index in the request's list, when not its own


@dataclass(frozen=True)
class SignedQuote:
    """What a receipt vouches for about one quote on one page."""

    route: str
    url: str
    final_url: str
    content_sha256: str
    normalised_sha256: str
    match: str
    start: int
    end: int
    pdf_page: int | None
    pdf_page_end: int | None
    retrieved_at: datetime
    doi: str
    doi_status: str
    retracted: bool | None

    @classmethod
    def of_row(cls, web: WebSource) -> SignedQuote:
        return cls(**{f.name: getattr(web, f.name) for f in fields(cls)})


@dataclass(frozen=True)
class CheckedWebQuote:
    """A piece of web evidence that passed every check: ready to store."""

    given: WebQuoteIn
    signed: SignedQuote
    log_index: int | None = None  # the receipt's leaf in the transparency log


class _Refused(Exception):
    def __init__(self, part: str, reason: str, message: str) -> None:
        super().__init__(message)
        self.part, self.reason, self.message = part, reason, message


def _page(claims: dict[str, Any], index: int) -> dict[str, Any]:
    pages = claims.get("pages") or []
    if not 0 <= index < len(pages):
        raise _Refused("index", RECEIPT_INVALID, "index names no page of the receipt.")
    return pages[index]


def _signed_quote(
    claims: dict[str, Any], *, index: int, quote: str, text: str | None, at_admission: bool
) -> SignedQuote:
    """Read what the receipt signs about ``quote``, or refuse with the part at fault.

    At resolve (``at_admission`` false) a fetch receipt's offsets cannot be found again
    without the page text, so only its page and its signature are checked there.
    """
    route = claims.get("route")
    if route not in WEB_ROUTES:
        raise _Refused(
            "receipt", RECEIPT_INVALID, f"a receipt of {route} vouches for no quote on a page."
        )
    if route == ROUTE_FETCH:
        if index != 0:
            raise _Refused("index", RECEIPT_INVALID, "a fetch receipt has one page: index 0.")
        page = _page(claims, 0)
        match, start, end = "exact", 0, 0
        if at_admission:
            if text is None or hashlib.sha256(text.encode("utf-8")).hexdigest() != page.get(
                "normalised_sha256"
            ):
                raise _Refused(
                    "text",
                    RECEIPT_INVALID,
                    "a fetch receipt needs `text`, the page's normalised text it signed.",
                )
            from attest_core.normalise import normalise  # numpy: imported by the first use

            needle = normalise(quote).text.strip()
            start = text.find(needle) if needle else -1
            if start < 0:
                raise _Refused("quote", NO_MATCH, "the quote is not in the signed text.")
            end = start + len(needle)
        result: dict[str, Any] = {"start": start, "end": end, "match": match}
    else:
        results = claims.get("results") or []
        if not 0 <= index < len(results):
            raise _Refused("index", RECEIPT_INVALID, "index names no result of the receipt.")
        result = results[index]
        if result.get("quote_sha256") != quote_sha256(quote):
            raise _Refused(
                "quote",
                QUOTE_MISMATCH,
                "the quote is not the one whose SHA-256 the receipt signed (send it "
                "exactly as it was sent to verify).",
            )
        if result.get("match") not in ADMITTED_VERDICTS:
            raise _Refused(
                "index", NO_MATCH, f"the signed verdict is {result.get('match')!r}, not a match."
            )
        page = _page(claims, result.get("page", 0))
    if page.get("content_kind") != REAL_PAGE:
        raise _Refused(
            "receipt",
            PAGE_NOT_REAL,
            f"the page's signed content_kind is {page.get('content_kind')!r}, not 'real'.",
        )
    return SignedQuote(
        route=route,
        url=page.get("url") or "",
        final_url=page.get("final_url") or "",
        content_sha256=page.get("content_sha256") or "",
        normalised_sha256=page.get("normalised_sha256") or "",
        match=result["match"],
        start=result["start"],
        end=result["end"],
        pdf_page=result.get("pdf_page"),
        pdf_page_end=result.get("pdf_page_end"),
        retrieved_at=datetime.fromisoformat(claims["issued_at"]),
        doi=page.get("doi") or "",
        doi_status=page.get("doi_status") or "",
        retracted=page.get("retracted"),
    )


def _checked_claims(receipt: str) -> dict[str, Any] | None:
    # The receipt checker (joserfc, numpy) is imported by the first check, not by every
    # importer of the selectors (the admin, so every manage.py command).
    from receipts.services import verify_receipt

    check = verify_receipt(receipt=receipt)
    return check.claims if check.valid else None


def checked_web_quotes(items: Sequence[WebQuoteIn]) -> list[CheckedWebQuote]:
    """Check every piece before anything is written; refuse the first bad one (400)."""
    checked = []
    for place, item in enumerate(items):
        position = place if item.position is None else item.position
        try:
            claims = _checked_claims(item.receipt)
            if claims is None:
                raise _Refused(
                    "receipt",
                    RECEIPT_INVALID,
                    "the receipt's signature does not check against this service's keys.",
                )
            signed = _signed_quote(
                claims, index=item.index, quote=item.quote, text=item.text, at_admission=True
            )
        except _Refused as refused:
            raise InvalidRequest(
                f"evidence[{position}]: {refused.message}",
                field=f"evidence[{position}].{refused.part}",
                details={"reason": refused.reason},
            ) from None
        checked.append(CheckedWebQuote(item, signed, receipt_log_index(item.receipt, claims)))
    return checked


def receipt_log_index(receipt: str, claims: dict[str, Any]) -> int | None:
    """The receipt's leaf in the transparency log, or None (signed before the log began).

    The call that answered with it recorded the leaf's index (in the transaction that
    appended it), under the request ID the receipt signs; the leaf there must hash to
    this receipt. Two primary-key and index probes, no scan of the log.
    """
    request_id = claims.get("request_id")
    if not isinstance(request_id, str):
        return None
    indexes = Verification.objects.filter(
        request_id=request_id, receipt_log_index__isnull=False
    ).values_list("receipt_log_index", flat=True)
    return next((i for i in indexes if i is not None and receipt_is_leaf(receipt, i)), None)


def web_source_intact(evidence: Evidence) -> bool:
    """On every resolve: the receipt still checks and still vouches for the stored quote."""
    web = evidence.web
    claims = _checked_claims(web.receipt)
    if claims is None or quote_sha256(web.quote) != evidence.quote_sha256:
        return False
    try:
        signed = _signed_quote(
            claims, index=web.receipt_index, quote=web.quote, text=None, at_admission=False
        )
    except _Refused:
        return False
    stored = SignedQuote.of_row(web)
    if signed.route == ROUTE_FETCH:
        # Offsets found in the caller's text at admission: not in the receipt to compare.
        signed = SignedQuote(**{**vars(signed), "start": stored.start, "end": stored.end})
    return signed == stored


def source_retracted(web: WebSource) -> bool:
    """Whether the page's DOI is retracted, by the latest Crossref answer we hold for it."""
    if not web.doi:
        return False
    later = CrossrefAnswer.objects.filter(
        doi=web.doi.lower(), fetched_at__gt=web.retrieved_at
    ).first()
    if later is not None:
        return bool(later.retracted)
    return bool(web.retracted)
