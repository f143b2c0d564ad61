"""One shared fixed-window limiter: a key, a rate, and the wait and headers it comes to.

Every server process of an instance shares the counts: with a Redis cache
(``CACHE_URL=redis://``) they live there, one key per window (``cache_count_key``);
without one (the embedded default, whose local-memory cache each gunicorn worker has its
own copy of) they live in the database table ``attest_ratecount``, one row per bucket,
counted by a single atomic upsert on SQLite and PostgreSQL alike. Each key's window is
staggered so they do not all reset on the same second (``window_end``). Headers follow
the IETF RateLimit draft: ``RateLimit-Policy`` names the quota and its window,
``RateLimit`` what is left and when it resets.
"""

from __future__ import annotations

import hashlib
import re
import time
import zlib
from dataclasses import dataclass
from functools import cache
from typing import cast

from django.conf import settings
from django.core.cache import caches
from django.db import connection
from django.db.models import QuerySet
from django_redis.cache import RedisCache

from attest.errors import CountUnreadable
from attest.models import RateCount
from attest.prepared import PreparedQuery, first_of
from attest.shared_state import in_redis

_RATE = re.compile(r"([0-9]+)/([0-9]*)([smhd])")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_rate(rate: str) -> tuple[int, int]:
    """``300/m`` as (300, 60) and ``10/5s`` as (10, 5); ValueError for anything else."""
    match = _RATE.fullmatch(rate)
    if match is None:
        raise ValueError(f"not a rate such as 300/m: {rate!r}")
    count, multiple, unit = match.groups()
    return int(count), int(multiple or 1) * _SECONDS[unit]


@dataclass(frozen=True)
class RateDecision:
    """What one request under a limit comes to."""

    policy: str  # the quota's name in the headers, e.g. "unpaid"
    limit: int
    window: int  # seconds
    used: int
    reset: int  # seconds until the current window ends

    @property
    def allowed(self) -> bool:
        return self.used <= self.limit

    @property
    def remaining(self) -> int:
        return max(0, self.limit - self.used)

    @property
    def wait(self) -> int:
        """Seconds to wait before the next request can pass: 0 while allowed."""
        return 0 if self.allowed else max(1, self.reset)

    def headers(self) -> dict[str, str]:
        # A refused request is told the same wait in RateLimit as in Retry-After: at a
        # window's last instant its reset reads 0, but the next request needs a second.
        reset = max(0, self.reset) if self.allowed else self.wait
        return {
            "RateLimit-Policy": f'"{self.policy}";q={self.limit};w={self.window}',
            "RateLimit": f'"{self.policy}";r={self.remaining};t={reset}',
        }


def counts_in_cache() -> bool:
    """Whether the counts live in the cache (a Redis every process shares), not the database:
    attest.shared_state decides, for everything shared."""
    return in_redis()


def window_end(key: str, window: int, now: float, *, inclusive: bool = False) -> int:
    """The end (Unix seconds) of ``key``'s fixed window of ``window`` seconds holding ``now``.

    Windows are staggered per key: each ends ``crc32(key) % window`` seconds past a
    multiple of ``window``, so the keys do not all reset on the same second. The database's
    windows are [end - window, end) (``end`` is the first such second after ``now``); the
    cache's are (end - window, end], ``inclusive`` (``end`` is ``now`` itself when ``now`` is
    on the key's grid), as django-ratelimit placed them when it kept these counts, so a count
    in Redis keeps its key and window across that change. The two grids are one second apart.
    """
    ts = int(now)
    end = ts - ts % window + zlib.crc32(key.encode()) % window
    return end if end > ts or (inclusive and end == ts) else end + window


# A cache key outlives its window by these seconds, so a count is never lost at the edge.
EXPIRY_SLACK = 5


def cache_count_key(group: str, key: str, rate: str, now: float) -> tuple[str, int]:
    """The cache's name (before the cache's own prefix) for ``key``'s count under ``rate``
    (``300/m``) in ``group`` at ``now``, and the end of that window (``window_end``,
    inclusive).

    The name is ``rl:`` and the SHA-256 of the group, the rate in seconds (``300/60s``), the
    key and the window's end: the form django-ratelimit gave these counts, kept so that a
    count made before the change (or by a process not yet upgraded) is the same count.
    """
    limit, period = parse_rate(rate)
    end = window_end(key, period, now, inclusive=True)
    digest = hashlib.sha256(f"{group}{limit}/{period}s{key}{end}".encode()).hexdigest()
    return "rl:" + digest, end


@cache
def _count_sql() -> str:
    quote = connection.ops.quote_name
    table = quote(RateCount._meta.db_table)
    fields = RateCount._meta.concrete_fields
    columns = {field.name: field.column for field in fields if field.column}
    bucket, end, used = (quote(columns[name]) for name in ("bucket", "window_end", "count"))
    # A later window starts the count again; a process whose clock lags adds to the newer one.
    return (
        f"INSERT INTO {table} ({bucket}, {end}, {used}) VALUES (%s, %s, 1) "
        f"ON CONFLICT ({bucket}) DO UPDATE SET "
        f"{used} = CASE WHEN {table}.{end} >= excluded.{end} THEN {table}.{used} + 1 ELSE 1 END, "
        f"{end} = CASE WHEN {table}.{end} >= excluded.{end} THEN {table}.{end} "
        f"ELSE excluded.{end} END "
        f"RETURNING {used}, {end}"
    )


# Lapsed rows are swept at most once a minute per process: housekeeping, not a count.
SWEEP_SECONDS = 60
_next_sweep = 0.0


def _database_usage(key: str, rate: str, policy: str, count: bool) -> dict | None:
    if not getattr(settings, "RATELIMIT_ENABLE", True):
        return None
    global _next_sweep
    limit, window = parse_rate(rate)
    now = time.time()
    # Counts are kept per rate, as the cache's keys are.
    bucket = f"{policy}:{rate}:{key}"
    # Staggered by the key alone, as the cache's windows are (one second apart: window_end).
    end = window_end(key, window, now)
    if count:
        with connection.cursor() as cursor:
            cursor.execute(_count_sql(), [bucket, end])
            used, end = cursor.fetchone()
        if now >= _next_sweep:
            _next_sweep = now + SWEEP_SECONDS
            RateCount.objects.filter(window_end__lte=int(now)).delete()
    else:
        rows = _CURRENT.rows(None, bucket=bucket, now=int(now))
        used, end = (rows[0].count, rows[0].window_end) if rows else (0, end)
    return {"count": used, "limit": limit, "time_left": end - int(now)}


def _current(_: None, *, bucket: str, now: int) -> QuerySet[RateCount]:
    return first_of(RateCount.objects.filter(bucket=bucket, window_end__gt=now))


# Compiled once (attest.prepared): the look is made at every unpaid call on the database.
_CURRENT = PreparedQuery(_current, bucket=str, now=int)


def _redis_count(group: str, key: str, rate: str) -> dict | None:
    """Count one request in one round trip: SET NX (the window's first request starts the
    key at 0 with its expiry) and INCR go as one MULTI/EXEC, so no other client's command
    comes between them and the key cannot lapse in between."""
    if not getattr(settings, "RATELIMIT_ENABLE", True):
        return None
    limit, period = parse_rate(rate)
    name, end = cache_count_key(group, key, rate, time.time())
    cache = cast(RedisCache, caches[getattr(settings, "RATELIMIT_USE_CACHE", "default")])
    name = cache.client.make_key(name)
    pipe = cache.client.get_client(write=True).pipeline(transaction=True)
    pipe.set(name, 0, nx=True, ex=period + EXPIRY_SLACK)
    pipe.incr(name)
    used = pipe.execute()[1]
    # The time left once counted: a window that ended meanwhile reads below 0 (rate_limit).
    return {"count": used, "limit": limit, "time_left": end - int(time.time())}


def _redis_look(group: str, key: str, rate: str) -> dict | None:
    """The count so far, in one round trip (a GET). No key yet is a count of 0; the
    window's first counted request creates the key (``_redis_count``)."""
    if not getattr(settings, "RATELIMIT_ENABLE", True):
        return None
    limit, _ = parse_rate(rate)
    name, end = cache_count_key(group, key, rate, time.time())
    cache = caches[getattr(settings, "RATELIMIT_USE_CACHE", "default")]
    used = cache.get(name, 0)
    return {"count": used, "limit": limit, "time_left": end - int(time.time())}


def _usage(key: str, rate: str, policy: str, count: bool) -> dict | None:
    if not counts_in_cache():
        return _database_usage(key, rate, policy, count)
    if count:
        return _redis_count(f"attest:{policy}", key, rate)
    return _redis_look(f"attest:{policy}", key, rate)


def _unreadable(usage: dict | None) -> bool:
    # A count the store did not give: a limit of 0 (no rate has one) and time_left -1. A
    # time_left below 0 with a real limit is only a window that ended while the call was
    # counted, which is no failure.
    return usage is not None and usage["limit"] == 0


def rate_limit(*, key: str, rate: str, policy: str, count: bool = True) -> RateDecision:
    """Count one request under ``key`` at ``rate`` (``300/m``); ``count=False`` only looks.

    A count the cache momentarily fails to give is read once more; one that still cannot be read
    raises ``CountUnreadable`` (a 503 ``unavailable``, as a cache outage), never a 429 the
    caller did not earn, nor a pass for unbounded work.
    """
    limit, window = parse_rate(rate)
    usage = _usage(key, rate, policy, count)
    if _unreadable(usage):
        usage = _usage(key, rate, policy, count)
    if usage is None:  # RATELIMIT_ENABLE is off
        return RateDecision(policy=policy, limit=limit, window=window, used=0, reset=window)
    if _unreadable(usage):
        raise CountUnreadable(f"the cache did not give the {policy} count twice in a row")
    return RateDecision(
        policy=policy,
        limit=limit,
        window=window,
        used=usage["count"],
        reset=max(0, usage["time_left"]),
    )
