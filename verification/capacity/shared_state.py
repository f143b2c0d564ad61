"""Small JSON states every server process must agree on: in Redis, or else in the database.

The capacity limits keep their counters here. Where the state lives follows
``CACHE_URL``: with Redis (production) each change is one optimistic Redis
transaction (WATCH/MULTI); with the process-local default cache it would not
be shared between gunicorn workers, so the state lives in the database table
``verification_sharedstate`` instead, changed under a row lock (PostgreSQL) or
the write lock SQLite's IMMEDIATE transactions take.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from django.conf import settings
from django.core.cache import cache
from django.db import IntegrityError, transaction

from verification.models import SharedState

T = TypeVar("T")
# change(state) -> (new state or None to forget it, result for the caller)
Change = Callable[[Any], tuple[Any, T]]

KEY_PREFIX = "attest:shared:v1:"


def in_redis() -> bool:
    """Whether the shared state is kept in Redis (the cache) rather than the database."""
    return settings.CACHES["default"]["BACKEND"].startswith("django_redis")


def change_state(key: str, change: Change[T], *, keep_seconds: float) -> T:
    """Apply ``change`` to the state under ``key`` atomically across processes.

    ``keep_seconds`` is how long the new state matters: after it the state is as
    good as absent and the store may drop it.
    """
    if in_redis():
        return _redis_change(key, change, keep_seconds)
    return _database_change(key, change, keep_seconds)


def read_state(key: str) -> Any:
    """The state under ``key`` now, or None; a read only, for checks that change nothing."""
    if in_redis():
        raw = _redis().get(_redis_key(key))
        return None if raw is None else json.loads(raw)
    row = SharedState.objects.filter(key=key, expires_at__gt=_now()).first()
    return None if row is None else row.value


def _redis():
    from django_redis import get_redis_connection

    return get_redis_connection("default")


def _redis_key(key: str) -> str:
    return cache.make_key(KEY_PREFIX + key)


def _redis_change(key: str, change: Change[T], keep_seconds: float) -> T:
    full_key = _redis_key(key)

    def attempt(pipe) -> T:
        raw = pipe.get(full_key)  # immediate: the key is WATCHed
        new, result = change(None if raw is None else json.loads(raw))
        pipe.multi()
        if new is None:
            pipe.delete(full_key)
        else:
            pipe.set(full_key, json.dumps(new), ex=max(1, math.ceil(keep_seconds)))
        return result

    # redis-py retries the whole attempt when another client changed the key meanwhile.
    return _redis().transaction(attempt, full_key, value_from_callable=True)


def _now() -> datetime:
    return datetime.now(UTC)


def _database_change(key: str, change: Change[T], keep_seconds: float) -> T:
    for _ in range(5):
        try:
            return _database_attempt(key, change, keep_seconds)
        except IntegrityError:
            continue  # another process created the row first: read it this time
    raise RuntimeError(f"shared state {key!r} could not be written")


def _database_attempt(key: str, change: Change[T], keep_seconds: float) -> T:
    now = _now()
    with transaction.atomic():
        row = SharedState.objects.select_for_update().filter(key=key).first()
        state = row.value if row is not None and row.expires_at > now else None
        new, result = change(state)
        expires = now + timedelta(seconds=keep_seconds)
        if new is None:
            if row is not None:
                row.delete()
        elif row is not None:
            SharedState.objects.filter(key=key).update(value=new, expires_at=expires)
        else:
            SharedState.objects.create(key=key, value=new, expires_at=expires)
            # A new key (a new caller's bucket) is when the table grows: drop lapsed rows.
            SharedState.objects.filter(expires_at__lte=now).delete()
    return result
