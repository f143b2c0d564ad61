"""robots.txt per RFC 9309, read with protego and kept in the shared store for a day.

The store is the one every server process shares (Redis with ``CACHE_URL``, else the
database: ``attest.shared_state``). One origin's robots.txt is fetched by
one process at a time: the first check takes the origin's fetch lock, and the others wait
for its answer (a few seconds at most: the fetch has a short deadline of its own), so many
requests for a slow site hold one fetch, not one each.
"""

from __future__ import annotations

import contextlib
import logging
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from django.core.cache import cache
from protego import Protego

from attest.errors import CACHE_OUTAGES, Blocked
from attest.shared_state import change_state, in_redis, read_state
from verification.network.fetch import (
    ROBOTS_TOKEN,
    BlockedAddress,
    HostNotFound,
    Target,
    fetch,
)

logger = logging.getLogger(__name__)

# RFC 9309 §2.5: parsers must read at least 500 KiB.
MAX_ROBOTS_BYTES = 500 * 1024
# The whole robots.txt fetch, every hop and read: it runs before any offer, unpaid.
ROBOTS_DEADLINE = 3.0
# A fetch lock its holder did not let go of (a process that died) lapses after this.
LOCK_SECONDS = ROBOTS_DEADLINE + 2.0
POLL_SECONDS = 0.05
# §2.4: cache for at most 24 hours. An unreachable file is retried sooner, since it
# disallows the whole site meanwhile.
CACHE_SECONDS = 24 * 60 * 60
UNREACHABLE_CACHE_SECONDS = 10 * 60

ALLOW_ALL = "allow_all"
DISALLOW_ALL = "disallow_all"


class RobotsDisallowed(Blocked):
    code = "robots_disallowed"
    message = "The site's robots.txt does not allow Attest to fetch this URL."


def _state_key(target: Target) -> str:
    return f"robots:v2:{target.parsed.origin}"


def _load_rules(target: Target) -> tuple[str, str, int]:
    """Fetch robots.txt for the target's origin: (rule, body, seconds to cache)."""
    parsed = target.parsed
    # Same origin, same checked addresses: robots.txt needs no second DNS answer either.
    robots = Target(
        parsed=replace(parsed, url=f"{parsed.origin}/robots.txt", target="/robots.txt"),
        addresses=target.addresses,
    )
    try:
        fetched = fetch(robots, max_bytes=MAX_ROBOTS_BYTES, deadline_seconds=ROBOTS_DEADLINE)
    except (HostNotFound, BlockedAddress):
        # A redirect we may not follow leaves the file unreachable: disallow (§2.3.1.4).
        return DISALLOW_ALL, "", UNREACHABLE_CACHE_SECONDS
    if fetched.outcome == "too_many_redirects":
        return ALLOW_ALL, "", CACHE_SECONDS  # §2.3.1.2: may be treated as unavailable.
    status = fetched.http_status
    if fetched.outcome in {"ok", "too_large"} and status is not None and 200 <= status < 300:
        # Past the cap, the first 500 KiB are parsed (§2.5).
        return "parse", fetched.body.decode("utf-8", errors="replace"), CACHE_SECONDS
    if fetched.outcome == "ok" and status is not None and 400 <= status < 500:
        return ALLOW_ALL, "", CACHE_SECONDS  # §2.3.1.3: unavailable means allowed.
    return DISALLOW_ALL, "", UNREACHABLE_CACHE_SECONDS  # 5xx, timeout, refused: §2.3.1.4.


def _take(target: Target, token: str) -> tuple[str, str] | str | None:
    """The origin's kept (rule, body); else "fetch" with its fetch lock taken; else None
    while another process holds the lock."""

    def look(state):
        if state and "rule" in state:
            return state, (state["rule"], state["body"])
        if state and state.get("until", 0) > time.time():
            return state, None  # another process is fetching it: wait for its answer
        return {"until": time.time() + LOCK_SECONDS, "holder": token}, "fetch"

    kept = read_state(_state_key(target))
    if kept and "rule" in kept:
        return kept["rule"], kept["body"]
    return change_state(_state_key(target), look, keep_seconds=LOCK_SECONDS)


def _load_all(targets: list[Target]) -> list[tuple[str, str, int] | BaseException]:
    """Fetch each robots.txt at once (network only: the threads touch no store)."""

    def load(target: Target) -> tuple[str, str, int] | BaseException:
        try:
            return _load_rules(target)
        except Exception as exc:  # handed back, so every lock is let go of first
            return exc

    if len(targets) <= 1:
        return [load(target) for target in targets]
    with ThreadPoolExecutor(max_workers=len(targets), thread_name_prefix="robots") as pool:
        return list(pool.map(load, targets))


def _keep(target: Target, loaded: tuple[str, str, int] | BaseException) -> None:
    """Keep what the fetch found, or let go of the lock for the next check to try again."""
    key = _state_key(target)
    if isinstance(loaded, BaseException):
        change_state(key, lambda _state: (None, None), keep_seconds=LOCK_SECONDS)
        return
    rule, body, seconds = loaded
    change_state(key, lambda _state: ({"rule": rule, "body": body}, None), keep_seconds=seconds)


def _rules_shared(targets: list[Target]) -> dict[str, tuple[str, str]]:
    """(rule, body) per origin of ``targets``: kept, or fetched once across processes.

    The store is read and written in the calling thread only; the fetches of the locks
    this call took run at once, and origins another process is fetching are waited for.
    """
    token = uuid.uuid4().hex
    pending = {target.parsed.origin: target for target in targets}
    found: dict[str, tuple[str, str]] = {}
    while pending:
        mine = []
        for origin, target in list(pending.items()):
            outcome = _take(target, token)
            if outcome is None:
                continue
            del pending[origin]
            if isinstance(outcome, tuple):
                found[origin] = outcome
            else:
                mine.append(target)
        loads = _load_all(mine)
        for target, loaded in zip(mine, loads, strict=True):
            _keep(target, loaded)
        for target, loaded in zip(mine, loads, strict=True):
            if isinstance(loaded, BaseException):
                raise loaded
            found[target.parsed.origin] = loaded[:2]
        if pending:
            time.sleep(POLL_SECONDS)
    return found


def _rules_live(targets: list[Target]) -> dict[str, tuple[str, str]]:
    found = {}
    for target in targets:
        rule, body, _seconds = _load_rules(target)
        found[target.parsed.origin] = (rule, body)
    return found


def _rules_local(target: Target) -> tuple[str, str]:
    """A redirect hop met inside a fetch thread without Redis: this process's cache."""
    key = f"attest:robots:v2:{target.parsed.origin}"
    try:
        kept = cache.get(key)
    except CACHE_OUTAGES:
        kept = None
    if kept is None:
        rule, body, seconds = _load_rules(target)
        kept = (rule, body)
        with contextlib.suppress(*CACHE_OUTAGES):
            cache.set(key, kept, seconds)
    return kept


def rules_for(targets: list[Target], *, in_thread: bool = False) -> dict[str, tuple[str, str]]:
    """(rule, body) per origin of ``targets``, each robots.txt read once across processes.

    ``in_thread``: called from a fetch thread, which must not use the database: without
    Redis the rules then come from this process's cache. The store only saves fetches:
    with Redis down, robots.txt is read live (fail open on the store, never on the
    rules), so an outage costs speed, not obedience.
    """
    if in_thread and not in_redis():
        return {t.parsed.origin: _rules_local(t) for t in targets}
    try:
        return _rules_shared(targets)
    except CACHE_OUTAGES:
        logger.warning("robots store unavailable; reading robots.txt live", exc_info=True)
        return _rules_live(targets)


def rules_for_pace(targets: list[Target]) -> dict[str, tuple[str, str]]:
    """The rules already admitted pages' origins have, for their Crawl-delay only: with
    the store down none (robots.txt was obeyed at admission; it is not read again)."""
    try:
        return _rules_shared(targets)
    except CACHE_OUTAGES:
        return {}


def allowed_by(rules: tuple[str, str], target: Target) -> bool:
    """Whether these rules of the target's origin let our user agent fetch its path."""
    rule, body = rules
    if target.parsed.target == "/robots.txt" or rule == ALLOW_ALL:
        return True
    if rule == DISALLOW_ALL:
        return False
    return Protego.parse(body).can_fetch(target.url, ROBOTS_TOKEN)


def robots_allows(target: Target, *, in_thread: bool = False) -> bool:
    """Whether robots.txt of the target's origin lets our user agent fetch its path."""
    rules = rules_for([target], in_thread=in_thread)[target.parsed.origin]
    return allowed_by(rules, target)


def ensure_robots_allow(target: Target) -> None:
    """Raise RobotsDisallowed unless robots.txt allows fetching the target."""
    if target.parsed.target == "/robots.txt":
        return
    if not robots_allows(target):
        raise RobotsDisallowed(details={"url": target.url})
