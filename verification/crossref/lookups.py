"""Crossref retraction data for the DOIs of cited pages: cached a day, paced across processes.

The batch route (``verify/citations``) makes one call for all its pages::

    outcomes = crossref_for_pages(
        [page.doi for page in pages], tier=call.tier, request_id=current_request_id()
    )

``None`` and repeated DOIs are fine; each distinct DOI is looked up once and the
answer is a ``CrossrefOutcome`` per DOI (lower-cased), or ``{}`` when DOI lookups are
off (``ATTEST_CROSSREF_URL`` empty: leave ``crossref`` and the two summary counts
out). For a page with a DOI::

    entry["crossref"] = outcomes[page.doi].as_json(doi_source=page.doi_source)
    PageClaims(..., doi=page.doi, doi_status=outcome.status, retracted=outcome.retracted)

and ``crossref_summary`` gives ``summary.retracted`` and ``summary.doi_unchecked``
from the outcome of each citation's page.

It never raises for Crossref's sake and never fails the call: a lookup that cannot
be made now is ``skipped`` with a ``reason`` (``rate_limited``: a tier's minute
budget is spent or Crossref said 429; ``busy``: other lookups held the one turn
until the batch's deadline; ``timeout``; ``unavailable``: a 5xx, a refused
connection or an answer that is not Crossref's envelope). ``found`` and
``not_found`` answers are kept a day in ``CrossrefAnswer``; skips are asked again.
Every lookup that was not answered from that cache is a ``CrossrefLookup`` row.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any
from urllib.parse import quote, urlencode

from django.conf import settings
from django.utils import timezone

from attest.errors import CACHE_OUTAGES
from attest.metrics import CROSSREF_LOOKUPS
from verification.crossref.pace import crossref_turn
from verification.engine.crossref import (
    CrossrefWork,
    NotCrossrefAnswer,
    notices_updating,
    read_work,
    work_list_items,
    work_message,
)
from verification.engine.pace import BUDGETS, PaceState
from verification.models import CrossrefAnswer, CrossrefLookup
from verification.network.fetch import USER_AGENT, FetchResult, fetch_api

FOUND, NOT_FOUND, SKIPPED = "found", "not_found", "skipped"
RATE_LIMITED, BUSY, TIMEOUT, UNAVAILABLE = "rate_limited", "busy", "timeout", "unavailable"

CACHE_FOR = timedelta(days=1)
# How long one batch may spend on all its lookups, waiting for its turns included.
LOOKUPS_DEADLINE_SECONDS = 15.0
# A work with a long reference list runs to a few hundred kilobytes; far past that,
# the answer is not one we can use.
MAX_ANSWER_BYTES = 8 * 1024 * 1024
# Notices that update one work: Crossref lists far fewer for any real DOI.
NOTICE_ROWS = 100
# Statuses of /works/{doi} that mean "not a Crossref DOI": unknown, malformed, gone.
_NOT_FOUND_STATUSES = frozenset({400, 404, 410})

# The wall clock the pacing state is kept by (budgets, Crossref's spacing, a 429's back-off),
# as seconds since the epoch. A test sets another to move time on without waiting for it.
pace_clock: Callable[[], float] = time.time


@dataclass(frozen=True)
class CrossrefOutcome:
    """What a page's DOI lookup came to: its status, why it was skipped, and the work."""

    doi: str
    status: str  # found | not_found | skipped
    reason: str | None = None  # for skipped: rate_limited | busy | timeout | unavailable
    work: CrossrefWork | None = None  # for found

    @property
    def retracted(self) -> bool | None:
        """True or False for a found work; None when Crossref's answer is unknown."""
        return self.work.retracted if self.work is not None else None

    def as_json(self, *, doi_source: str | None = None) -> dict[str, Any]:
        """The ``crossref`` block of the page's entry in ``pages``."""
        body: dict[str, Any] = {"doi": self.doi}
        if doi_source is not None:
            body["doi_source"] = doi_source
        body.update(status=self.status, reason=self.reason)
        if self.work is not None:
            body.update(self.work.as_json())
        else:
            body["retracted"] = None
        return body


def crossref_summary(outcomes: Iterable[CrossrefOutcome | None]) -> dict[str, int]:
    """``retracted`` and ``doi_unchecked`` over the outcome of each citation's page
    (None for a page without a DOI)."""
    outcomes = list(outcomes)
    return {
        "retracted": sum(1 for o in outcomes if o is not None and o.retracted),
        "doi_unchecked": sum(1 for o in outcomes if o is not None and o.status == SKIPPED),
    }


class CallLookups:
    """The Crossref step of one verification call, shared by every route.

    DOIs that cited links name by themselves (doi.org links) are looked up while the
    pages are fetched (``look_up`` from the request's thread, the fetches running in
    theirs); ``attach`` then looks up the DOIs only the pages revealed and gives each
    page its outcome. Lookups run in the request's thread because they read and write
    the database (cache, log and, without Redis, the pace row).

    Free samples (tier ``sample``) read our own pages and never ask Crossref.
    """

    def __init__(self, *, tier: str, request_id: str) -> None:
        self.enabled = bool(settings.ATTEST_CROSSREF_URL)
        self._tier = tier
        self._request_id = request_id
        self._outcomes: dict[str, CrossrefOutcome] = {}

    def look_up(self, dois: Iterable[str | None]) -> None:
        """Look up the DOIs not looked up yet in this call (each on its own deadline)."""
        if not self.enabled or self._tier not in BUDGETS:
            return
        wanted = [doi for doi in dict.fromkeys(d.lower() for d in dois if d)]
        wanted = [doi for doi in wanted if doi not in self._outcomes]
        if wanted:
            self._outcomes.update(
                crossref_for_pages(wanted, tier=self._tier, request_id=self._request_id)
            )

    def attach(self, pages: Iterable[Any]) -> None:
        """Give each page with a DOI its outcome (``page.crossref``), looking up the rest."""
        pages = list(pages)
        self.look_up(page.doi for page in pages)
        for page in pages:
            page.crossref = self._outcomes.get(page.doi) if page.doi else None

    def summary(self, outcomes: Iterable[CrossrefOutcome | None]) -> dict[str, int]:
        """``retracted`` and ``doi_unchecked`` of a citations summary; none with lookups off."""
        return crossref_summary(outcomes) if self.enabled else {}


def crossref_for_pages(
    dois: Iterable[str | None],
    *,
    tier: str,
    request_id: str = "",
    deadline_seconds: float = LOOKUPS_DEADLINE_SECONDS,
) -> dict[str, CrossrefOutcome]:
    """Look up each distinct DOI (cache first, then Crossref, paced); see the module docstring.

    ``tier`` is ``paid`` or ``trial``: each has its own minute budget.
    """
    if tier not in BUDGETS:
        raise ValueError(f"tier must be one of {sorted(BUDGETS)}, not {tier!r}")
    if not settings.ATTEST_CROSSREF_URL:
        return {}
    wanted = list(dict.fromkeys(doi.lower() for doi in dois if doi))
    deadline = time.monotonic() + deadline_seconds
    outcomes = _cached(wanted)
    for doi in wanted:
        if doi not in outcomes:
            outcomes[doi] = _lookup(doi, tier=tier, request_id=request_id, deadline=deadline)
    return {doi: outcomes[doi] for doi in wanted}


# --- the cache ---------------------------------------------------------------------------


def _cached(dois: list[str]) -> dict[str, CrossrefOutcome]:
    rows = CrossrefAnswer.objects.filter(doi__in=dois, expires_at__gt=timezone.now())
    return {
        row.doi: CrossrefOutcome(
            doi=row.doi,
            status=row.status,
            work=CrossrefWork.from_json(row.work) if row.work is not None else None,
        )
        for row in rows
    }


def _remember(outcome: CrossrefOutcome) -> None:
    now = timezone.now()
    CrossrefAnswer.objects.update_or_create(
        doi=outcome.doi,
        defaults={
            "status": outcome.status,
            "work": outcome.work.as_json() if outcome.work is not None else None,
            "retracted": outcome.retracted,
            "fetched_at": now,
            "expires_at": now + CACHE_FOR,
        },
    )


# --- one lookup -------------------------------------------------------------------------


@dataclass
class _Trace:
    """What the lookup log keeps about the requests one lookup made."""

    started: float = field(default_factory=time.monotonic)
    requests: int = 0
    http_status: int | None = None


class _Skip(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _lookup(doi: str, *, tier: str, request_id: str, deadline: float) -> CrossrefOutcome:
    trace = _Trace()
    # Every request of the lookup ends by the batch's deadline; the margin covers the
    # bookkeeping. A holder that died frees the turn this long after taking it.
    lease = max(0.0, deadline - time.monotonic()) + 5.0
    outcome: CrossrefOutcome | None = None
    try:
        with crossref_turn(lease=lease, wait_until=deadline) as pace:
            if pace is None:
                outcome = CrossrefOutcome(doi=doi, status=SKIPPED, reason=BUSY)
            else:
                # Another batch may have asked for the same DOI while this one waited.
                answered = _cached([doi]).get(doi)
                if answered is not None:
                    return answered
                try:
                    outcome = _ask(doi, pace=pace, tier=tier, deadline=deadline, trace=trace)
                except _Skip as skip:
                    outcome = CrossrefOutcome(doi=doi, status=SKIPPED, reason=skip.reason)
                if outcome.status != SKIPPED:
                    # Kept before the turn is passed on, so the next holder finds it.
                    _remember(outcome)
    except CACHE_OUTAGES:
        # Redis holds the turn and the pace: without it no lookup may be paced, so none
        # is made. An answer already had (the turn failed only on its way out) stands.
        if outcome is None:
            outcome = CrossrefOutcome(doi=doi, status=SKIPPED, reason=UNAVAILABLE)
    CROSSREF_LOOKUPS.labels(outcome.status, outcome.reason or "").inc()
    CrossrefLookup.objects.create(
        request_id=request_id[:128],
        doi=doi,
        tier=tier,
        status=outcome.status,
        reason=outcome.reason or "",
        http_status=trace.http_status,
        requests=trace.requests,
        latency_ms=(time.monotonic() - trace.started) * 1000,
    )
    return outcome


def _ask(
    doi: str, *, pace: PaceState, tier: str, deadline: float, trace: _Trace
) -> CrossrefOutcome:
    now = pace_clock()
    if pace.backing_off(now) or not pace.take(tier, now):
        raise _Skip(RATE_LIMITED)
    base = settings.ATTEST_CROSSREF_URL
    work = _get(f"{base}/works/{quote(doi, safe='/')}", pace=pace, deadline=deadline, trace=trace)
    if work.http_status in _NOT_FOUND_STATUSES:
        return CrossrefOutcome(doi=doi, status=NOT_FOUND)
    message = _body(work, work_message)
    # The work's own updated-by can miss a notice; the notices that name it in their
    # update-to are asked for too.
    query = urlencode(
        {"filter": f"updates:{doi}", "select": "DOI,update-to", "rows": str(NOTICE_ROWS)}
    )
    listing = _get(f"{base}/works?{query}", pace=pace, deadline=deadline, trace=trace)
    items = _body(listing, work_list_items)
    work_read = read_work(message, also_updated_by=notices_updating(doi, items))
    return CrossrefOutcome(doi=doi, status=FOUND, work=work_read)


def _body(answer: FetchResult, read: Callable[[bytes], Any]) -> Any:
    if answer.http_status != 200:
        raise _Skip(UNAVAILABLE)
    try:
        return read(answer.body)
    except NotCrossrefAnswer:
        raise _Skip(UNAVAILABLE) from None


def _user_agent() -> str:
    mailto = settings.ATTEST_CROSSREF_MAILTO
    # Crossref serves a client that names a contact from its polite pool.
    return f"{USER_AGENT} (mailto:{mailto})" if mailto else USER_AGENT


def _get(url: str, *, pace: PaceState, deadline: float, trace: _Trace) -> FetchResult:
    """One request to Crossref, spaced as its advertised limit asks; _Skip if it cannot be."""
    wait = pace.wait_before_request(pace_clock())
    if time.monotonic() + wait >= deadline:
        raise _Skip(RATE_LIMITED)
    time.sleep(wait)
    left = deadline - time.monotonic()
    if left <= 0:
        raise _Skip(TIMEOUT)
    sent_at = pace_clock()
    answer = fetch_api(
        url,
        headers={"User-Agent": _user_agent(), "Accept": "application/json"},
        deadline_seconds=min(settings.ATTEST_CROSSREF_TIMEOUT, left),
        max_bytes=MAX_ANSWER_BYTES,
    )
    pace.answered(
        sent_at=sent_at, status=answer.http_status, headers=answer.headers, now=pace_clock()
    )
    trace.requests += 1
    trace.http_status = answer.http_status
    if answer.outcome == "timeout":
        raise _Skip(TIMEOUT)
    if answer.outcome != "ok":
        raise _Skip(UNAVAILABLE)
    if answer.http_status == 429:
        raise _Skip(RATE_LIMITED)
    return answer
