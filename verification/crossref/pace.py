"""One Crossref lookup at a time across every server process, and the pacing state it guards.

A lookup runs inside ``crossref_turn``: it holds the lock and the shared
``PaceState`` (minute budgets, Crossref's advertised spacing, a 429's back-off),
which it may change and which is saved before the lock is released.

Where the lock lives follows ``attest.shared_state.in_redis``: with Redis (``CACHE_URL=redis://``),
a Redis lock and a cache key; with the embedded local-memory cache, which each
process has its own copy of, a lease row in the database, taken by a
conditional UPDATE that is atomic on SQLite and PostgreSQL alike. Either way a
holder that dies loses the lock when its lease runs out.
"""

from __future__ import annotations

import contextlib
import secrets
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Protocol, cast

from django.core.cache import cache
from django.db import transaction
from redis.exceptions import LockError

from attest.shared_state import in_redis
from verification.engine.pace import PaceState
from verification.models import CrossrefPace

if TYPE_CHECKING:
    from redis.lock import Lock

LOCK_KEY = "attest:crossref:lock:v1"
STATE_KEY = "attest:crossref:pace:v1"
ROW = "crossref"
POLL_SECONDS = 0.02


def _shared_cache() -> bool:
    """Whether the cache is shared between processes (Redis), so it can hold the lock:
    attest.shared_state decides, for everything shared."""
    return in_redis()


class _LockingCache(Protocol):
    """What django-redis's cache adds to Django's and this module uses."""

    def lock(self, key: str, *, timeout: float, sleep: float, blocking_timeout: float) -> Lock: ...


class _RedisStore:
    def __init__(self) -> None:
        self._lock: Lock | None = None

    def acquire(self, *, lease: float, wait_until: float) -> bool:
        # A cast: django-redis ships no types and the cache is typed as Django's BaseCache;
        # _shared_cache() chose this store because the cache has lock().
        self._lock = cast(_LockingCache, cache).lock(
            LOCK_KEY,
            timeout=lease,
            sleep=POLL_SECONDS,
            blocking_timeout=max(0.0, wait_until - time.monotonic()),
        )
        return bool(self._lock.acquire())

    def load(self) -> PaceState:
        return PaceState.from_json(cache.get(STATE_KEY))

    def save(self, state: PaceState) -> None:
        cache.set(STATE_KEY, state.to_json(), timeout=None)

    def release(self) -> None:
        assert self._lock is not None  # crossref_turn releases only after acquire()
        # Past its lease the lock may already be someone else's; redis-py refuses then.
        with contextlib.suppress(LockError):
            self._lock.release()


class _DatabaseStore:
    def __init__(self) -> None:
        self._token = secrets.token_hex(16)

    def acquire(self, *, lease: float, wait_until: float) -> bool:
        with transaction.atomic():
            CrossrefPace.objects.get_or_create(name=ROW)
        while True:
            now = time.time()
            # Read first, write only when the lease looks free: waiting processes on
            # SQLite then do not queue for its single write lock every few milliseconds.
            if CrossrefPace.objects.filter(name=ROW, lease_until__lt=now).exists():
                taken = CrossrefPace.objects.filter(name=ROW, lease_until__lt=now).update(
                    holder=self._token, lease_until=now + lease
                )
                if taken:
                    return True
            if time.monotonic() + POLL_SECONDS > wait_until:
                return False
            time.sleep(POLL_SECONDS)

    def load(self) -> PaceState:
        return PaceState.from_json(
            CrossrefPace.objects.filter(name=ROW).values_list("state", flat=True).first()
        )

    def save(self, state: PaceState) -> None:
        CrossrefPace.objects.filter(name=ROW, holder=self._token).update(state=state.to_json())

    def release(self) -> None:
        CrossrefPace.objects.filter(name=ROW, holder=self._token).update(lease_until=0.0)


@contextlib.contextmanager
def crossref_turn(*, lease: float, wait_until: float) -> Iterator[PaceState | None]:
    """Hold the one Crossref turn and its pacing state, or yield None if the turn did not
    come before ``wait_until`` (``time.monotonic()``); the state is saved on the way out.

    ``lease`` bounds how long a holder that died keeps everyone else waiting; it must
    exceed the longest lookup.
    """
    store = _RedisStore() if _shared_cache() else _DatabaseStore()
    if not store.acquire(lease=lease, wait_until=wait_until):
        yield None
        return
    try:
        state = store.load()
        try:
            yield state
        finally:
            store.save(state)  # a budget spent stays spent, however the lookup ended
    finally:
        store.release()
