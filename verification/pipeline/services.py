"""Single-page services: admit a URL before payment, verify one quote, fetch one page's text."""

from __future__ import annotations

import bisect
import logging
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import replace
from typing import Any

from attest.errors import CACHE_OUTAGES, AttestError, Blocked
from receipts.services import issue_receipt
from verification.capacity import queues
from verification.crossref.lookups import CallLookups
from verification.engine.match import FUZZY_WORK_PER_CALL, MatchTooCostly, WorkBudget
from verification.network.fetch import FetchResult, Target, check_url
from verification.network.politeness import ensure_host_room
from verification.network.robots import RobotsDisallowed, allowed_by, rules_for
from verification.pipeline.pages import Page
from verification.pipeline.records import recorded, refusal_tally, verification_record
from verification.pipeline.steps import (
    MatchOptions,
    Timings,
    fetch_and_look_up,
    fetch_checked,
    match_on_page,
    normalised_quote,
    page_claims,
    read_pages,
    result_claims,
    too_costly,
)

logger = logging.getLogger(__name__)

ROUTE_QUOTE = "verify/quote"
ROUTE_FETCH = "fetch"


def unpaid_checks(*, client_ip: str) -> AbstractContextManager[None]:
    """What the checks before an offer run under: one of an unpaid caller's few places
    (429 ``unpaid_in_flight`` past them)."""
    return queues.unpaid_checks_place(client_ip=client_ip)


@contextmanager
def paid_refusals_bounded(*, client_ip: str) -> Iterator[None]:
    """What a paid single call's admission and work run under: the caller's bucket of
    uncharged failures, shared with the batches (6 places, one back every 10 s).

    A refusal after the payment verified (a full queue, a site over its budget, a refused
    redirect: anything raised as an error) releases the claim or the credit hold and costs
    the caller nothing, so each one uses a place; with none left the call is refused first,
    429 ``uncharged_failures``, before any outbound work. A fresh authorization for every
    call thus buys a bounded number of uncharged fetches. An answered call uses none and,
    unlike a batch, holds none while it runs. With the shared store down a paid call goes
    on uncounted, as its site's budget does (the outage is logged); unpaid work is refused
    meanwhile by the unpaid limit.
    """
    try:
        queues.failures_ensure_room(client_ip=client_ip)
    except CACHE_OUTAGES:
        logger.warning("uncharged-failure places unavailable; paid call uncounted", exc_info=True)
    try:
        yield
    except AttestError:
        try:
            queues.failures_use(client_ip=client_ip)
        except CACHE_OUTAGES:
            logger.warning("uncharged-failure place not used: store down", exc_info=True)
        raise


class SingleCallBounds:
    """The limits billing's pipeline applies to verify/quote and fetch (billing.pipeline)."""

    def unpaid_checks(self, *, client_ip: str) -> AbstractContextManager[None]:
        return unpaid_checks(client_ip=client_ip)

    def paid_work(self, *, client_ip: str) -> AbstractContextManager[None]:
        return paid_refusals_bounded(client_ip=client_ip)


class BatchBounds(SingleCallBounds):
    """A batch's: its run holds a place of the uncharged-failure bucket itself
    (batches.batch_run), kept only when every citation failed."""

    def paid_work(self, *, client_ip: str) -> AbstractContextManager[None]:
        return nullcontext()


SINGLE_CALL_BOUNDS = SingleCallBounds()
BATCH_BOUNDS = BatchBounds()


def url_admit(*, url: str, route: str, request_id: str) -> Target:
    """The page checks made before payment: the host resolves, every address is public,
    robots.txt lets us fetch the path, and the site's fetch budget is not spent.

    Raises HostNotFound (422), BlockedAddress or RobotsDisallowed (403); a refusal is
    counted in the refusal tally. The returned target pins the checked addresses.
    """
    try:
        target = check_url(url)
        rules = rules_for([target])[target.parsed.origin]
        if not allowed_by(rules, target):
            raise RobotsDisallowed(details={"url": target.url})
        ensure_host_room(target, rules)
    except AttestError as exc:
        if isinstance(exc, Blocked):
            exc.details.setdefault("field", "url")
        refusal_tally(route=route, error=exc, request_id=request_id, url=url)
        raise
    return replace(target, robots=rules)


def quote_answer(
    *,
    route: str,
    request_id: str,
    tier: str,
    fetched_by: Callable[[], FetchResult],
    url: str,
    raw_quote: str,
    options: MatchOptions,
    polite: list[Target] | None = None,
) -> dict[str, Any]:
    """Fetch, read, match one quote and sign; record the outcome either way."""
    quote = normalised_quote(raw_quote, mode=options.mode)
    timings = Timings()
    page: Page | None = None
    result: dict | None = None

    def record(error: AttestError | None, log_index: int | None) -> None:
        verification_record(
            route=route,
            request_id=request_id,
            tier=tier,
            mode=options.mode,
            url=url,
            timings=timings,
            page=page,
            result=result,
            error=error,
            receipt_log_index=log_index,
        )

    lookups = CallLookups(tier=tier, request_id=request_id)
    with recorded(record) as recording:
        started = time.monotonic()
        fetched = fetch_and_look_up([fetched_by], [url], lookups, polite)[0]
        timings.fetch_ms = (time.monotonic() - started) * 1000
        page = read_pages([fetched])[0]
        timings.extract_ms = page.extract_ms
        started = time.monotonic()
        try:
            result = match_on_page(
                page, quote, options=options, budget=WorkBudget(FUZZY_WORK_PER_CALL)
            )
        except MatchTooCostly as exc:
            raise too_costly(exc) from None
        timings.match_ms = (time.monotonic() - started) * 1000
        lookups.attach([page])
        signed_page = page_claims(page)
        signed_result = result_claims(result, page_index=0, raw_quote=raw_quote, mode=options.mode)
        issued = recording.answered(
            lambda: issue_receipt(
                route=route,
                request_id=request_id,
                tier=tier,
                pages=[signed_page],
                results=[signed_result],
            )
        )
    return {
        "result": result,
        "page": page.as_json(),
        "injection_flags": page.injection_flags,
        "advice": page.advice,
        **issued.answer_fields(),
        "tier": tier,
    }


def quote_verify(
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
    NotOnEdge (501) for a PDF on an edge server, OverCapacity (503 pdf_queue_full),
    MatchTooCostlyError (422).
    """
    return quote_answer(
        route=ROUTE_QUOTE,
        request_id=request_id,
        tier=tier,
        fetched_by=lambda: fetch_checked(target),
        url=target.url,
        raw_quote=quote,
        options=MatchOptions(mode, case_sensitive, threshold),
        polite=[target],
    )


def page_text_fetch(*, target: Target, request_id: str, tier: str) -> dict[str, Any]:
    """Fetch an admitted page and return its verdict and normalised text, signed.

    The receipt signs the page's ``normalised_sha256``, so anyone can check ``text``
    (and offsets into it) against the receipt alone. Errors as for quote_verify.
    """
    timings = Timings()
    page: Page | None = None

    def record(error: AttestError | None, log_index: int | None) -> None:
        verification_record(
            route=ROUTE_FETCH,
            request_id=request_id,
            tier=tier,
            mode="",
            url=target.url,
            timings=timings,
            page=page,
            error=error,
            receipt_log_index=log_index,
        )

    lookups = CallLookups(tier=tier, request_id=request_id)
    with recorded(record) as recording:
        started = time.monotonic()
        fetched = fetch_and_look_up(
            [lambda: fetch_checked(target)], [target.url], lookups, [target]
        )[0]
        timings.fetch_ms = (time.monotonic() - started) * 1000
        page = read_pages([fetched])[0]
        timings.extract_ms = page.extract_ms
        lookups.attach([page])
        signed_page = page_claims(page)
        issued = recording.answered(
            lambda: issue_receipt(
                route=ROUTE_FETCH,
                request_id=request_id,
                tier=tier,
                pages=[signed_page],
                results=[],
            )
        )
    body: dict[str, Any] = {
        "page": page.as_json(),
        "text": page.text.text if page.text is not None else None,
        "normalised_sha256": page.normalised_sha256,
        "injection_flags": page.injection_flags,
        "advice": page.advice,
        **issued.answer_fields(),
        "tier": tier,
    }
    if page.pdf is not None and page.text is not None:
        body["pdf_pages"] = pdf_page_spans(page)
    return body


def pdf_page_spans(page: Page) -> list[list[int]]:
    """[start, end) of each PDF page read, in code points of the normalised text.

    A page starts at the first normalised character that came from it; the one space
    that joins it to the next page is not part of it.
    """
    assert page.pdf is not None and page.text is not None
    text = page.text
    positions = range(len(text.text) + 1)
    starts = [
        bisect.bisect_left(positions, source, key=text.to_source) for source in page.pdf.page_starts
    ]
    spans = []
    for start, end in zip(starts, [*starts[1:], len(text.text)], strict=True):
        if end > start and text.text[end - 1] == " ":
            end -= 1
        spans.append([start, end])
    return spans
