"""Politeness toward cited sites: a budget of fetches per origin, shared by every process.

An origin (scheme, host and port: what one robots.txt covers) gets ``ATTEST_HOST_RATE``
fetches (``120/m`` by default); a ``Crawl-delay`` in its robots.txt for AttestBot tightens
that to one fetch per delay (capped at ``MAX_CRAWL_DELAY`` seconds). Counts live where the
other limits' do (``attest.ratelimit``: Redis with ``CACHE_URL``, else the database).

Before payment the budget is only looked at: an origin with none left is refused with 429
``rate_limited`` (``details.reason`` ``host_rate_limited``). Each page fetch and redirect
hop takes one turn; a turn that is not there after payment fails the whole call, not
charged. robots.txt fetches take none. Without Redis a hop met in a batch's fetch thread
is counted by the request thread before the hop is fetched (the fetch threads must not use
the database; ``TurnDesk``), so a site over its budget sees no request, as with Redis.
"""

from __future__ import annotations

import logging
import math
import queue
import threading
from concurrent.futures import Future

from django.conf import settings
from protego import Protego

from attest.errors import CACHE_OUTAGES, RateLimited
from attest.ratelimit import RateDecision, parse_rate, rate_limit
from attest.shared_state import in_redis
from verification.network.fetch import ROBOTS_TOKEN, Target
from verification.network.robots import (
    ALLOW_ALL,
    RobotsDisallowed,
    allowed_by,
    rules_for,
    rules_for_pace,
)

logger = logging.getLogger(__name__)

POLICY = "host"
MAX_CRAWL_DELAY = 10.0

_thread = threading.local()


class HostRateLimited(RateLimited):
    message = "Attest has fetched this site as often as it allows itself to for now."


class TurnDesk:
    """Where a batch's fetch threads, without Redis, have a redirect hop's turn taken before
    the hop is fetched.

    The budget then lives in the database, which the fetch threads must not use: the
    request thread's connection, and any transaction it is in, is its own, and on SQLite a
    second connection's write would wait behind that transaction's lock. So a hop's thread hands its
    turn to the request thread (``ask``) and waits; the request thread, waiting for the
    fetches, takes each turn as it comes (``serve``) in the shared table every other fetch
    is counted in, and hands back the answer. A hop over its site's budget is refused
    before any request reaches the site (429 ``host_rate_limited``, the call not charged).
    """

    def __init__(self) -> None:
        # An ask, or None when a fetch ends (it wakes ``serve`` to look again).
        self._asks: queue.SimpleQueue[_Ask | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._open = True

    def ask(self, target: Target, rules: tuple[str, str]) -> None:
        """From a fetch thread: the hop's turn, taken by the request thread; raises
        HostRateLimited when the site has none left."""
        reply: Future[None] = Future()
        with self._lock:
            if not self._open:
                raise RuntimeError("the call ended before this redirect hop's turn was taken")
            self._asks.put((target, rules, reply))
        reply.result()

    def serve(self, fetches: list[Future]) -> None:
        """In the request thread: take the fetch threads' turns until every fetch has ended."""
        for fetch in fetches:
            fetch.add_done_callback(lambda _: self._asks.put(None))
        while not all(fetch.done() for fetch in fetches):
            ask = self._asks.get()
            if ask is not None:
                _answer(ask)

    def close(self) -> None:
        """No turn is taken after this: an ask still waiting, or made later, is refused, so
        no fetch thread waits for a request thread that has left (on an error)."""
        with self._lock:
            self._open = False
        while True:
            try:
                ask = self._asks.get_nowait()
            except queue.Empty:
                return
            if ask is not None:
                ask[2].set_exception(RuntimeError("the call ended before this hop's turn"))


_Ask = tuple[Target, tuple[str, str], "Future[None]"]


def _answer(ask: _Ask) -> None:
    target, rules, reply = ask
    try:
        take_host_turn(target, rules)
    except Exception as exc:  # the fetch thread raises it, as if counted there
        reply.set_exception(exc)
    else:
        reply.set_result(None)


def mark_fetch_thread(desk: TurnDesk | None = None) -> None:
    """A fetch pool's initializer: this thread must not use the database; the hops it
    cannot count are counted through ``desk``."""
    _thread.fetch = True
    _thread.desk = desk


def in_fetch_thread() -> bool:
    return getattr(_thread, "fetch", False)


def host_label(target: Target) -> str:
    """The origin's host, with its port when that is not the scheme's default."""
    parsed = target.parsed
    host = f"[{parsed.host}]" if ":" in parsed.host else parsed.host
    default = parsed.port == (443 if parsed.scheme == "https" else 80)
    return host if default else f"{host}:{parsed.port}"


def crawl_delay(rules: tuple[str, str]) -> float | None:
    """The Crawl-delay robots.txt sets for AttestBot (or every agent), capped; else None."""
    rule, body = rules
    if rule != "parse":
        return None
    delay = Protego.parse(body).crawl_delay(ROBOTS_TOKEN)
    if delay is None or delay <= 0:
        return None
    return min(float(delay), MAX_CRAWL_DELAY)


def origin_rate(rules: tuple[str, str]) -> str:
    """The origin's budget: ATTEST_HOST_RATE, or one fetch per Crawl-delay when tighter."""
    count, window = parse_rate(settings.ATTEST_HOST_RATE)
    delay = crawl_delay(rules)
    if delay is None:
        return settings.ATTEST_HOST_RATE
    # The fixed-window limiter counts whole seconds: one fetch per ceil(delay) seconds,
    # or for a delay under a second as many a second as fit.
    per, seconds = (1, math.ceil(delay)) if delay >= 1 else (math.floor(1 / delay), 1)
    if per / seconds < count / window:
        return f"{per}/{seconds}s"
    return settings.ATTEST_HOST_RATE


def _refused(target: Target, decision: RateDecision, *, after_payment: bool) -> HostRateLimited:
    wait = max(1, decision.reset)
    when = "this call's pages were fetched" if after_payment else "any payment"
    return HostRateLimited(
        f"Attest fetches {host_label(target)} at most {decision.limit} times in "
        f"{decision.window} seconds, and has no fetch left there now (refused before {when}; "
        "not charged); retry after Retry-After seconds.",
        retry_after=wait,
        details={"reason": "host_rate_limited", "host": host_label(target), "url": target.url},
    )


def _decision(target: Target, rules: tuple[str, str], *, count: bool) -> RateDecision | None:
    try:
        return rate_limit(
            key=target.parsed.origin, rate=origin_rate(rules), policy=POLICY, count=count
        )
    except CACHE_OUTAGES:
        # Politeness cannot be counted with Redis down: paid work goes on (unpaid work is
        # refused by the unpaid limit meanwhile), and the outage is logged.
        logger.warning("host budget unavailable; fetching uncounted", exc_info=True)
        return None


def ensure_host_room(target: Target, rules: tuple[str, str]) -> None:
    """Before payment: 429 host_rate_limited when the origin has no fetch left (looks only)."""
    decision = _decision(target, rules, count=False)
    if decision is not None and decision.remaining == 0:
        raise _refused(target, decision, after_payment=False)


def take_host_turn(target: Target, rules: tuple[str, str]) -> None:
    """Count one fetch of the origin; 429 host_rate_limited when there was none left."""
    decision = _decision(target, rules, count=True)
    if decision is not None and not decision.allowed:
        raise _refused(target, decision, after_payment=True)


def take_host_turns(targets: list[Target]) -> None:
    """One turn per page about to be fetched, taken in the calling (request) thread."""
    if not targets:
        return
    # Rules admission already read are used as read (one store read less a call).
    rules = {t.parsed.origin: t.robots for t in targets if t.robots is not None}
    unread = [t for t in targets if t.robots is None]
    if unread:
        rules = {**rules_for_pace(unread), **rules}
    for target in targets:
        take_host_turn(target, rules.get(target.parsed.origin, (ALLOW_ALL, "")))


def hop_checks(target: Target) -> None:
    """What every redirect hop passes: robots.txt, then a turn of the hop's origin.

    A hop met inside a fetch thread (a batch's pages are fetched at once) cannot use the
    database: without Redis its robots.txt comes from this process's cache and its turn
    is taken by the request thread before the hop is fetched (TurnDesk).
    """
    threaded = in_fetch_thread()
    rules = rules_for([target], in_thread=threaded)[target.parsed.origin]
    if not allowed_by(rules, target):
        raise RobotsDisallowed(details={"url": target.url})
    if threaded and not in_redis():
        desk = getattr(_thread, "desk", None)
        if desk is None:
            raise RuntimeError("a fetch thread without Redis needs a TurnDesk")
        desk.ask(target, rules)
        return
    take_host_turn(target, rules)
