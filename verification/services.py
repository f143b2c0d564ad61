"""Verification services: check one quote against one page, and the free samples."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
from django.conf import settings

from attest.errors import AttestError, InvalidRequest, Unprocessable
from receipts.payloads import PageClaims, PassageClaims, ResultClaims, quote_sha256
from receipts.services import issue_receipt
from verification.engine.match import FUZZY_WORK_PER_CALL, MatchTooCostly, WorkBudget, match_quote
from verification.engine.normalise import normalise
from verification.engine.passages import ClaimHasNoWords, find_passages
from verification.fetch import FetchResult, Target, check_url, fetch
from verification.models import Verification
from verification.pages import Page, build_page
from verification.robots import ensure_robots_allow

ROUTE_QUOTE = "verify/quote"
ROUTE_SAMPLE = "sample/quote"
MAX_QUOTE_CHARS = 1000
MODES = ("fuzzy", "exact", "passages")

SAMPLES_DIR = Path(__file__).resolve().parent / "samples"
SAMPLE_PAGES = {"demo": "demo_page.html", "missing": "not_found.html"}
SAMPLE_QUOTES = {
    # One word differs from the page ("fell" for "dropped"): a fuzzy match.
    "fuzzy": "nitrate levels fell 18 % in 2025, after three years of steady increases",
    "exact": "64 percent of beach samples met the bathing standard",
    "passages": "The port authority reported an 18 percent drop in nitrate levels during 2025",
}


class MatchTooCostlyError(Unprocessable):
    code = "match_too_costly"
    message = (
        'The quote is too long to match fuzzily on a page this size; use "match": "exact" '
        "or a shorter quote."
    )


def normalised_quote(quote: str, *, mode: str, field_name: str = "quote") -> str:
    """The quote as matched, after the checks the seed makes before any work.

    Raises InvalidRequest for an empty quote, one over 1,000 characters after
    normalisation, or a passages claim made only of common words.
    """
    text = normalise(quote).text.strip()
    if not text:
        raise InvalidRequest(
            f"{field_name}: the quote is empty after normalisation.", field=field_name
        )
    if len(text) > MAX_QUOTE_CHARS:
        raise InvalidRequest(
            f"{field_name}: at most {MAX_QUOTE_CHARS} characters after normalisation "
            f"(this one has {len(text)}).",
            field=field_name,
        )
    if mode == "passages":
        try:
            find_passages("", text)
        except ClaimHasNoWords:
            raise InvalidRequest(
                f"{field_name}: the claim has only common words or punctuation; "
                "add the words that carry its meaning.",
                field=field_name,
            ) from None
    return text


@dataclass
class _Timings:
    started: float = field(default_factory=time.monotonic)
    fetch_ms: float | None = None
    extract_ms: float | None = None
    match_ms: float | None = None

    def total_ms(self) -> float:
        return (time.monotonic() - self.started) * 1000


def _match(page: Page, quote: str, *, mode: str, case_sensitive: bool, threshold: float) -> dict:
    """The result block of the response: where the quote (or the claim's support) is."""
    text = page.text.text if page.text is not None else None
    result: dict[str, Any]
    if mode == "passages":
        found = find_passages(text or "", quote)
        result = {
            "match": found.match,
            "score": found.score,
            "start": found.start,
            "end": found.end,
            "context": found.context,
            "occurrences": found.occurrences,
            "passages": [
                {
                    "start": p.start,
                    "end": p.end,
                    "score": p.score,
                    "text": p.text,
                    "missing": list(p.missing),
                    "flags": list(p.flags),
                    **_pdf_fields(page, p.start, p.end),
                }
                for p in found.passages
            ],
            "scorer": found.scorer,
            "note": found.note,
        }
    elif text is None:
        result = {"match": "none", "score": None, "start": None, "end": None, "context": None}
        result["occurrences"] = 0
    else:
        try:
            found = match_quote(
                text,
                quote,
                mode=mode,
                case_sensitive=case_sensitive,
                threshold=threshold,
                budget=WorkBudget(FUZZY_WORK_PER_CALL),
            )
        except MatchTooCostly as exc:
            raise MatchTooCostlyError(
                details={"needed": exc.needed, "budget": exc.budget}
            ) from None
        result = {
            "match": found.match,
            "score": found.score,
            "start": found.start,
            "end": found.end,
            "context": found.context,
            "occurrences": found.occurrences,
        }
    result["normalised_sha256"] = page.normalised_sha256
    if result["start"] is not None:
        result.update(_pdf_fields(page, result["start"], result["end"]))
    return result


def _pdf_fields(page: Page, start: int, end: int) -> dict[str, int]:
    if page.pdf is None:
        return {}
    first, last = page.pdf_pages(start, end)
    return {"pdf_page": first, "pdf_page_end": last}


def _receipt(
    *, route: str, request_id: str, tier: str, page: Page, raw_quote: str, mode: str, result: dict
) -> str:
    page_claims = PageClaims(
        url=page.requested_url,
        final_url=page.final_url,
        http_status=page.http_status,
        content_kind=page.content_kind,
        content_sha256=page.content_sha256,
        normalised_sha256=page.normalised_sha256,
        evidence=page.evidence,
        doi=page.doi,
    )
    passages = None
    if mode == "passages":
        passages = [
            PassageClaims(
                start=p["start"],
                end=p["end"],
                score=p["score"],
                pdf_page=p.get("pdf_page"),
                pdf_page_end=p.get("pdf_page_end"),
            )
            for p in result["passages"]
        ]
    result_claims = ResultClaims(
        page=0,
        quote_sha256=quote_sha256(raw_quote),
        mode=mode,
        match=result["match"],
        score=result["score"],
        start=result["start"],
        end=result["end"],
        pdf_page=result.get("pdf_page"),
        pdf_page_end=result.get("pdf_page_end"),
        scorer=result.get("scorer"),
        passages=passages,
    )
    return issue_receipt(
        route=route, request_id=request_id, tier=tier, pages=[page_claims], results=[result_claims]
    )


def _outcome(error: AttestError | None) -> str:
    if error is None:
        return Verification.Outcome.ANSWERED
    if error.status_code >= 500 and error.code == "internal_error":
        return Verification.Outcome.FAILED
    return Verification.Outcome.REFUSED


def _record(
    *,
    route: str,
    request_id: str,
    tier: str,
    mode: str,
    url: str,
    timings: _Timings,
    page: Page | None = None,
    result: dict | None = None,
    error: AttestError | None = None,
) -> None:
    Verification.objects.create(
        route=route,
        request_id=request_id,
        tier=tier,
        outcome=_outcome(error),
        status_code=200 if error is None else error.status_code,
        error_code="" if error is None else error.code,
        mode=mode,
        match=(result or {}).get("match", ""),
        host=(urlsplit(url).hostname or "")[:255],
        requested_url=url,
        final_url=page.final_url if page else "",
        http_status=page.http_status if page else None,
        content_kind=page.content_kind if page else "",
        content_sha256=(page.content_sha256 or "") if page else "",
        normalised_sha256=(page.normalised_sha256 or "") if page else "",
        pdf_pages_read=page.pdf.pages_read if page and page.pdf else None,
        fetch_ms=timings.fetch_ms,
        extract_ms=timings.extract_ms,
        match_ms=timings.match_ms,
        total_ms=timings.total_ms(),
    )


def _answer(
    *,
    route: str,
    request_id: str,
    tier: str,
    fetched_by: Any,
    url: str,
    raw_quote: str,
    mode: str,
    case_sensitive: bool,
    threshold: float,
) -> dict[str, Any]:
    """Run the pipeline after the request was validated; record the outcome either way."""
    quote = normalised_quote(raw_quote, mode=mode)
    timings = _Timings()
    page: Page | None = None
    result: dict | None = None

    def record(error: AttestError | None = None) -> None:
        _record(
            route=route,
            request_id=request_id,
            tier=tier,
            mode=mode,
            url=url,
            timings=timings,
            page=page,
            result=result if error is None else None,
            error=error,
        )

    try:
        started = time.monotonic()
        fetched: FetchResult = fetched_by()
        timings.fetch_ms = (time.monotonic() - started) * 1000
        page = build_page(fetched, edge=settings.ATTEST_EDGE)
        timings.extract_ms = page.extract_ms
        started = time.monotonic()
        result = _match(page, quote, mode=mode, case_sensitive=case_sensitive, threshold=threshold)
        timings.match_ms = (time.monotonic() - started) * 1000
        receipt = _receipt(
            route=route,
            request_id=request_id,
            tier=tier,
            page=page,
            raw_quote=raw_quote,
            mode=mode,
            result=result,
        )
    except AttestError as exc:
        record(exc)
        raise
    except Exception:
        # Kept for staff to find; the exception itself still becomes a logged 500.
        record(AttestError(code="internal_error", status_code=500))
        raise
    record()
    return {
        "result": result,
        "page": page.as_json(),
        "injection_flags": page.injection_flags,
        "advice": page.advice,
        "receipt": receipt,
        "tier": tier,
    }


def admit_url(*, url: str, route: str, mode: str, request_id: str) -> Target:
    """The page checks made before payment: the host resolves, every address is public,
    and robots.txt lets us fetch the path.

    Raises HostNotFound (422), BlockedAddress or RobotsDisallowed (403); a refusal is
    recorded like any other. The returned target pins the checked addresses for the fetch.
    """
    try:
        target = check_url(url)
        ensure_robots_allow(target)
    except AttestError as exc:
        _record(
            route=route,
            request_id=request_id,
            tier="",
            mode=mode,
            url=url,
            timings=_Timings(),
            error=exc,
        )
        raise
    return target


def verify_quote(
    *,
    target: Target,
    quote: str,
    mode: str = "fuzzy",
    case_sensitive: bool = False,
    threshold: float = 0.9,
    request_id: str,
    tier: str,
) -> dict[str, Any]:
    """Fetch an admitted page and report whether the (already validated) quote is on it.

    Redirect hops are checked again (BlockedAddress, HostNotFound, RobotsDisallowed);
    NotOnEdge (501) for a PDF on an edge server, MatchTooCostlyError (422).
    """

    def fetched_by() -> FetchResult:
        return fetch(target, before_hop=ensure_robots_allow)

    return _answer(
        route=ROUTE_QUOTE,
        request_id=request_id,
        tier=tier,
        fetched_by=fetched_by,
        url=target.url,
        raw_quote=quote,
        mode=mode,
        case_sensitive=case_sensitive,
        threshold=threshold,
    )


def sample_page_bytes(name: str = "demo") -> bytes:
    return (SAMPLES_DIR / SAMPLE_PAGES[name]).read_bytes()


def sample_page_url(name: str = "demo", *, scheme: str = "", host: str = "") -> str:
    """The demo page's URL under ATTEST_PUBLIC_URL, the one base URL the service uses.

    ``scheme`` and ``host`` (the request's) are accepted for existing callers and not
    used: a sample signs the same URL wherever it was asked.
    """
    path = "/v1/sample/page" if name == "demo" else "/v1/sample/missing"
    return settings.ATTEST_PUBLIC_URL + path


def sample_quote(
    *, mode: str = "fuzzy", page_name: str = "demo", request_id: str, scheme: str, host: str
) -> dict[str, Any]:
    """The real pipeline on our own demo page's bytes, in process: no network, no charge."""
    url = sample_page_url(page_name, scheme=scheme, host=host)
    status = 200 if page_name == "demo" else 404

    def fetched_by() -> FetchResult:
        body = sample_page_bytes(page_name)
        return FetchResult(
            requested_url=url,
            final_url=url,
            outcome="ok",
            http_status=status,
            headers=httpx.Headers({"content-type": "text/html; charset=utf-8"}),
            body=body,
        )

    return _answer(
        route=ROUTE_SAMPLE,
        request_id=request_id,
        tier="sample",
        fetched_by=fetched_by,
        url=url,
        raw_quote=SAMPLE_QUOTES[mode],
        mode=mode,
        case_sensitive=False,
        threshold=0.9,
    )
