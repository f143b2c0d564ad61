"""Batches: verify/citations (quote/URL pairs) and verify/quotes (many quotes on one page).

Both run one pipeline. Before payment: every URL admitted (address, robots.txt),
the caller's bucket of uncharged failures and the match queue checked. After it:
a place in the bucket held while the batch runs, each distinct page fetched once
and all of them at once, PDFs through the shared PDF queue, then the matching
inside the shared match queue with one fuzzy budget (twice one call's) spent in
page order. A batch whose every quote failed is a 422 and keeps its bucket place.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from attest.errors import AttestError, InvalidRequest
from attest_core.passages import NOTE as PASSAGES_NOTE
from billing.pricing import priced_route
from billing.services import TIER_PAID
from receipts.services import IssuedReceipt, issue_receipt
from verification.capacity import queues
from verification.crossref.lookups import CallLookups
from verification.engine.match import FUZZY_WORK_PER_CALL, MatchTooCostly, WorkBudget
from verification.network.addresses import parse_url
from verification.network.fetch import FetchResult, HostNotFound, Target, check_url
from verification.network.politeness import ensure_host_room
from verification.network.robots import RobotsDisallowed, allowed_by, rules_for
from verification.pipeline.pages import Page, dead_page
from verification.pipeline.records import item_record, recorded, refusal_tally, verification_record
from verification.pipeline.steps import (
    MatchOptions,
    MatchTooCostlyError,
    Timings,
    failed_result,
    fetch_and_look_up,
    fetch_checked,
    match_on_page,
    normalised_quote,
    page_claims,
    read_pages,
    result_claims,
)

ROUTE_CITATIONS = "verify/citations"
ROUTE_QUOTES = "verify/quotes"


def _size(route: str) -> int:
    size = priced_route(route).max_size
    if size is None:
        raise LookupError(f"the price list names no batch size for {route}")
    return size


# What one payment buys: the price list holds the sizes its offers name.
MAX_CITATIONS = _size(ROUTE_CITATIONS)
MAX_QUOTES = _size(ROUTE_QUOTES)
# The fuzzy searches of one batch share twice what one verify/quote call may use.
BATCH_FUZZY_WORK = 2 * FUZZY_WORK_PER_CALL


class BatchTooLarge(InvalidRequest):
    """A malformed request like any other (400 invalid_request naming the list); the
    resolve seed's 422 citation_limit means a source too large to return, not this."""

    message = "The batch is larger than the route allows; split it into several calls."


class AllHostsNotFound(HostNotFound):
    message = "No URL of the batch has a host name that resolves; check their spelling."


@dataclass(frozen=True)
class BatchItem:
    """One quote of a batch: which distinct page it is checked on, as sent and as matched."""

    page: int
    raw_quote: str
    quote: str


@dataclass
class AdmittedBatch:
    """A batch that passed every check made before payment."""

    route: str
    urls: list[str]  # distinct, in order of first appearance
    # One per URL: fetches the checked page, or answers None for a host that does not resolve.
    fetchers: list[Callable[[], FetchResult | None]]
    items: list[BatchItem]
    options: MatchOptions
    client_ip: str
    # False for the free samples: they read our own pages in process, outside every limit.
    limited: bool = True
    # The admitted pages (those that resolved): each takes a turn of its site's budget.
    targets: list[Target] = field(default_factory=list)


@dataclass
class BatchRun:
    """What a batch found: one page per distinct URL, one result per quote."""

    pages: list[Page]
    results: list[dict[str, Any]]
    issued: IssuedReceipt
    summary: dict[str, int] = field(default_factory=dict)


def check_batch_size(count: int, *, limit: int, noun: str, field_name: str) -> None:
    """400 invalid_request naming the list, for a batch over the route's size."""
    if count > limit:
        raise BatchTooLarge(
            f"{field_name}: at most {limit} {noun} in one call (this one has {count}); "
            "split it into several calls.",
            details={"field": field_name, "limit": limit, "count": count},
        )


def _admit_urls(
    urls: list[str], first_use: list[int], url_field: Callable[[int], str]
) -> list[Target | None]:
    """Resolve and check every distinct URL at once, then read each origin's robots.txt once
    (``rules_for``: once across every process, the others waiting for its answer).

    None stands for a URL whose host does not resolve. The refusal raised is that of
    the first citation, in request order, with a bad URL.
    """
    outcomes: list[Target | AttestError | None] = [None] * len(urls)

    def resolve(index: int) -> None:
        try:
            outcomes[index] = check_url(urls[index])
        except HostNotFound:
            outcomes[index] = None
        except AttestError as exc:
            outcomes[index] = exc

    with ThreadPoolExecutor(max_workers=len(urls), thread_name_prefix="admit") as pool:
        list(pool.map(resolve, range(len(urls))))
    live = [outcome for outcome in outcomes if isinstance(outcome, Target)]
    # Each origin's robots.txt read once, all at once (the store kept in this thread).
    rules = rules_for(live) if live else {}
    for index, outcome in enumerate(outcomes):
        if not isinstance(outcome, Target):
            continue
        if not allowed_by(rules[outcome.parsed.origin], outcome):
            outcomes[index] = RobotsDisallowed(details={"url": outcome.url})
            continue
        try:
            ensure_host_room(outcome, rules[outcome.parsed.origin])
        except AttestError as exc:
            outcomes[index] = exc
    for index, outcome in enumerate(outcomes):
        if isinstance(outcome, AttestError):
            outcome.details.setdefault("field", url_field(first_use[index]))
            raise outcome
    assert _no_refusal(outcomes)  # the loop above raised each one
    return outcomes


def _no_refusal(outcomes: list[Target | AttestError | None]) -> TypeGuard[list[Target | None]]:
    return not any(isinstance(outcome, AttestError) for outcome in outcomes)


@dataclass
class CheckedBatch:
    """A batch whose body and local limits passed: nothing resolved or fetched yet."""

    route: str
    written: list[str]  # each distinct URL as the caller first wrote it
    first_use: list[int]  # the request index of each distinct URL's first use
    keys: list[str]  # each distinct URL's canonical form
    items: list[BatchItem]
    options: MatchOptions
    url_field: Callable[[int], str]
    client_ip: str


def batch_check(
    *,
    route: str,
    urls: list[str],
    raw_quotes: list[str],
    options: MatchOptions,
    quote_field: Callable[[int], str],
    url_field: Callable[[int], str],
    client_ip: str,
    request_id: str,
) -> CheckedBatch:
    """The checks made before payment that need no outbound work, cheapest first.

    ``urls`` and ``raw_quotes`` run in parallel (one entry per quote). Raises
    InvalidRequest for a bad quote or URL, RateLimited (uncharged_failures) or
    OverCapacity (match_queue_full); a refusal is tallied, never charged.
    """
    quotes = [
        normalised_quote(raw, mode=options.mode, field_name=quote_field(i))
        for i, raw in enumerate(raw_quotes)
    ]
    try:
        queues.failures_ensure_room(client_ip=client_ip)
        queues.MATCH_QUEUE.ensure_room()
        distinct: dict[str, int] = {}
        first_use: list[int] = []
        pages = []
        for index, url in enumerate(urls):
            key = parse_url(url).url
            if key not in distinct:
                distinct[key] = len(distinct)
                first_use.append(index)
            pages.append(distinct[key])
    except AttestError as exc:
        refusal_tally(route=route, error=exc, request_id=request_id, url=urls[0])
        raise
    return CheckedBatch(
        route=route,
        # Each distinct page is checked as the caller first wrote it: the canonical form
        # can be longer (a host 0 is 0.0.0.0) and past the length the caller was held to.
        written=[urls[index] for index in first_use],
        first_use=first_use,
        keys=list(distinct),
        items=batch_items(pages, raw_quotes, quotes),
        options=options,
        url_field=url_field,
        client_ip=client_ip,
    )


def batch_admit_urls(checked: CheckedBatch, *, request_id: str) -> AdmittedBatch:
    """The outbound checks made before the work: every URL's host and robots.txt.

    Raises BlockedAddress or RobotsDisallowed for the first bad URL, RateLimited
    (host_rate_limited) for a site over its budget, or AllHostsNotFound when none
    resolves; a refusal is tallied, never charged.
    """
    try:
        targets = _admit_urls(checked.written, checked.first_use, checked.url_field)
        if all(target is None for target in targets):
            hosts = sorted({parse_url(u).host for u in checked.written})
            raise AllHostsNotFound(details={"hosts": hosts})
    except AttestError as exc:
        refusal_tally(route=checked.route, error=exc, request_id=request_id, url=checked.written[0])
        raise
    field_of = checked.url_field
    return AdmittedBatch(
        route=checked.route,
        urls=checked.keys,
        fetchers=[
            _fetcher(target, field_of(checked.first_use[index]))
            for index, target in enumerate(targets)
        ],
        items=checked.items,
        options=checked.options,
        client_ip=checked.client_ip,
        targets=[target for target in targets if target is not None],
    )


def batch_admit(*, request_id: str, **request: Any) -> AdmittedBatch:
    """Every check made before payment: ``batch_check`` then ``batch_admit_urls``."""
    checked = batch_check(request_id=request_id, **request)
    return batch_admit_urls(checked, request_id=request_id)


def batch_items(pages: list[int], raw_quotes: list[str], quotes: list[str]) -> list[BatchItem]:
    return [BatchItem(p, raw, q) for p, raw, q in zip(pages, raw_quotes, quotes, strict=True)]


def _fetcher(target: Target | None, field_name: str) -> Callable[[], FetchResult | None]:
    def fetch_one() -> FetchResult | None:
        if target is None:
            return None
        try:
            return fetch_checked(target, field_name=field_name)
        except HostNotFound:
            return None  # a redirect to a host that does not resolve: a dead page, as a result

    return fetch_one


def _pages(batch: AdmittedBatch, fetched: list[FetchResult | None]) -> list[Page]:
    """Dead URLs become their result pages; the rest are read (PDFs through the PDF queue)."""
    live = [answer for answer in fetched if answer is not None]
    read = iter(read_pages(live))
    return [
        next(read) if answer is not None else dead_page(url)
        for url, answer in zip(batch.urls, fetched, strict=True)
    ]


def batch_match(
    pages: list[Page], items: list[BatchItem], options: MatchOptions
) -> list[dict[str, Any]]:
    """Match every quote on its page, in page order, from one shared fuzzy budget.

    Each fuzzy search may use what one verify/quote call may, and no more than the
    batch has left. A quote that does not fit gets an error of its own, saying which
    limit it met; exact matches need no budget, so they are still found after it is
    spent.
    """
    shared = WorkBudget(BATCH_FUZZY_WORK)
    results: list[dict[str, Any] | None] = [None] * len(items)
    for index in sorted(range(len(items)), key=lambda i: (items[i].page, i)):
        item = items[index]
        allowance = WorkBudget(min(FUZZY_WORK_PER_CALL, shared.remaining))
        try:
            results[index] = match_on_page(
                pages[item.page], item.quote, options=options, budget=allowance
            )
        except MatchTooCostly as exc:
            results[index] = failed_result(_limit_met(exc, shared))
            continue
        shared.spend(allowance.spent)
    return [result for result in results if result is not None]


def _limit_met(exc: MatchTooCostly, shared: WorkBudget) -> MatchTooCostly:
    """The error naming the limit a quote met: its own per-quote one or the batch's share."""
    if exc.reason == "wide_alphabet":
        return exc
    if exc.needed > FUZZY_WORK_PER_CALL:
        return MatchTooCostly(needed=exc.needed, budget=FUZZY_WORK_PER_CALL)
    return MatchTooCostly(needed=exc.needed, budget=shared.remaining, exhausted=True)


def summarise(results: list[dict[str, Any]], *, mode: str) -> dict[str, int]:
    kinds = ["exact", "fuzzy", "none"] + (["passages"] if mode == "passages" else [])
    summary = {kind: sum(1 for r in results if r["match"] == kind) for kind in kinds}
    summary["failed"] = sum(1 for r in results if "error" in r)
    return summary


def batch_run(*, batch: AdmittedBatch, request_id: str, tier: str) -> BatchRun:
    """Fetch, read, match and sign an admitted batch; record it however it ends.

    Raises RateLimited (uncharged_failures) when the caller's last bucket place went
    meanwhile, RobotsDisallowed / BlockedAddress met at a redirect, OverCapacity
    (pdf_queue_full, match_queue_full), NotOnEdge, and MatchTooCostlyError with
    ``details.failed`` when every quote failed: none of them is charged.
    """
    timings = Timings()
    pages: list[Page] = []
    results: list[dict[str, Any]] = []
    mode = batch.options.mode

    def record(error: AttestError | None, log_index: int | None) -> None:
        outcomes = results or [{"match": None, "score": None}] * len(batch.items)
        verification_record(
            route=batch.route,
            request_id=request_id,
            tier=tier,
            mode=mode,
            url=batch.urls[0],
            timings=timings,
            page=pages[0] if len(pages) == 1 else None,
            error=error,
            receipt_log_index=log_index,
            pages=pages,
            items=[
                item_record(r, page_index=i.page)
                for r, i in zip(outcomes, batch.items, strict=True)
            ],
        )

    lookups = CallLookups(tier=tier, request_id=request_id)
    holding_place = answered = False
    try:
        with recorded(record) as recording:
            if batch.limited:
                queues.failures_take(client_ip=batch.client_ip)
                holding_place = True
            started = time.monotonic()
            fetched = fetch_and_look_up(batch.fetchers, batch.urls, lookups, batch.targets)
            timings.fetch_ms = (time.monotonic() - started) * 1000
            pages = _pages(batch, fetched)
            timings.extract_ms = sum(page.extract_ms for page in pages)
            with queues.MATCH_QUEUE.join() if batch.limited else nullcontext() as place:
                if place is not None:
                    place.wait_turn()
                started = time.monotonic()
                results = batch_match(pages, batch.items, batch.options)
                timings.match_ms = (time.monotonic() - started) * 1000
            failed = [i for i, result in enumerate(results) if "error" in result]
            if len(failed) == len(results):
                raise MatchTooCostlyError(
                    "Every quote of the batch was too costly to match fuzzily; use "
                    '"match": "exact" or shorter quotes.',
                    details={"failed": failed},
                )
            # After the match queue is left: a slow Crossref never holds a matching place.
            lookups.attach(pages)
            signed_pages = [page_claims(page) for page in pages]
            signed_results = [
                result_claims(r, page_index=item.page, raw_quote=item.raw_quote, mode=mode)
                for r, item in zip(results, batch.items, strict=True)
            ]
            failures = [{"index": i, "code": results[i]["error"]["code"]} for i in failed]
            issued = recording.answered(
                lambda: issue_receipt(
                    route=batch.route,
                    request_id=request_id,
                    tier=tier,
                    pages=signed_pages,
                    results=signed_results,
                    extra={"failed": failures},
                )
            )
            answered = True
    finally:
        if holding_place and _gives_place_back(answered=answered, results=results, tier=tier):
            queues.failures_give_back(client_ip=batch.client_ip)
    summary = summarise(results, mode=mode)
    if batch.route != ROUTE_QUOTES:
        summary.update(lookups.summary(pages[item.page].crossref for item in batch.items))
    return BatchRun(pages=pages, results=results, issued=issued, summary=summary)


def _gives_place_back(*, answered: bool, results: list[dict[str, Any]], tier: str) -> bool:
    """Whether a batch that held a place in the caller's bucket gives it back.

    An answered batch does. One whose every quote failed keeps it. A paid batch refused
    after its payment was verified (a full queue, a redirect to a refused page) keeps it
    too: it failed uncharged, and the place is what bounds the work a caller's payments
    buy without being charged. A trial batch refused so gives it back (its caller's
    unpaid limit counted the request already).
    """
    if answered:
        return True
    if results and all("error" in result for result in results):
        return False
    return tier != TIER_PAID


# --- the two routes' answers ---------------------------------------------------------


def page_entry(page: Page) -> dict[str, Any]:
    """A page of a batch answer: the verify/quote page (its ``crossref`` block included)
    plus its hashes, flags and advice."""
    return {
        **page.as_json(),
        "normalised_sha256": page.normalised_sha256,
        "injection_flags": page.injection_flags,
        "advice": page.advice,
    }


def citations_answer(run: BatchRun, batch: AdmittedBatch, *, tier: str) -> dict[str, Any]:
    results = []
    for result, item in zip(run.results, batch.items, strict=True):
        page = run.pages[item.page]
        entry = {
            "url": page.requested_url,
            "page": item.page,
            "final_url": page.final_url,
            "http_status": page.http_status,
            "content_kind": page.content_kind,
            "advice": page.advice,
            **result,
        }
        entry.pop("note", None)  # said once, at the top, for the whole batch
        results.append(entry)
    body: dict[str, Any] = {
        "results": results,
        "pages": [page_entry(page) for page in run.pages],
        "summary": run.summary,
    }
    if batch.options.mode == "passages":
        body["note"] = PASSAGES_NOTE
    return {**body, **run.issued.answer_fields(), "tier": tier}


def quotes_answer(run: BatchRun, batch: AdmittedBatch, *, tier: str) -> dict[str, Any]:
    page = run.pages[0]
    body: dict[str, Any] = {
        "results": run.results,
        "page": page.as_json(),
        "injection_flags": page.injection_flags,
        "advice": page.advice,
        "summary": run.summary,
    }
    if batch.options.mode == "passages":
        body["note"] = PASSAGES_NOTE
    return {**body, **run.issued.answer_fields(), "tier": tier}
