"""robots.txt per RFC 9309, read with protego and kept in the shared cache for a day."""

from __future__ import annotations

import logging
from dataclasses import replace

from django.core.cache import cache
from protego import Protego

from attest.errors import CACHE_OUTAGES, Blocked
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
ROBOTS_DEADLINE = 10.0
# §2.4: cache for at most 24 hours. An unreachable file is retried sooner, since it
# disallows the whole site meanwhile.
CACHE_SECONDS = 24 * 60 * 60
UNREACHABLE_CACHE_SECONDS = 10 * 60

ALLOW_ALL = "allow_all"
DISALLOW_ALL = "disallow_all"


class RobotsDisallowed(Blocked):
    code = "robots_disallowed"
    message = "The site's robots.txt does not allow Attest to fetch this URL."


def _cache_key(target: Target) -> str:
    return f"attest:robots:v1:{target.parsed.origin}"


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


def _cached_rules(key: str) -> tuple[str, str] | None:
    # The cache only saves fetches: with Redis down, robots.txt is read live (fail open
    # on the cache, never on the rules), so an outage costs speed, not obedience.
    try:
        return cache.get(key)
    except CACHE_OUTAGES:
        logger.warning("robots cache unavailable; reading robots.txt live", exc_info=True)
        return None


def _remember_rules(key: str, rules: tuple[str, str], seconds: int) -> None:
    try:
        cache.set(key, rules, seconds)
    except CACHE_OUTAGES:
        logger.warning("robots cache unavailable; rules not kept", exc_info=True)


def robots_allows(target: Target) -> bool:
    """Whether robots.txt of the target's origin lets our user agent fetch its path."""
    key = _cache_key(target)
    cached = _cached_rules(key)
    if cached is None:
        rule, body, seconds = _load_rules(target)
        cached = (rule, body)
        _remember_rules(key, cached, seconds)
    rule, body = cached
    if rule == ALLOW_ALL:
        return True
    if rule == DISALLOW_ALL:
        return False
    return Protego.parse(body).can_fetch(target.url, ROBOTS_TOKEN)


def ensure_robots_allow(target: Target) -> None:
    """Raise RobotsDisallowed unless robots.txt allows fetching the target."""
    if target.parsed.target == "/robots.txt":
        return
    if not robots_allows(target):
        raise RobotsDisallowed(details={"url": target.url})
