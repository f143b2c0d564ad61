"""Where state every server process must agree on lives: the one place that decides.

``in_redis()`` is the decision: Redis when ``CACHE_URL`` names one (the cache is
django-redis), else the database, since the process-local default cache is not shared
between gunicorn workers. Everything shared reads it here: the rate limits
(attest.ratelimit), the capacity limits and robots.txt leases (verification.capacity,
verification.network) and the Crossref pacing lock (verification.crossref.pace).

Small JSON states live behind ``change_state``/``read_state``: with Redis each change is
one optimistic Redis transaction (WATCH/MULTI); in the database, the ``SharedState``
table, changed under a row lock (PostgreSQL) or the write lock SQLite's IMMEDIATE
transactions take. A change that is a fixed rule over one key can instead be a Lua
script (``run_script``): one round trip, atomic in Redis, where a WATCH/MULTI change is
three. Money is never kept here: a prepaid balance and its holds are rows
changed in the database's own transactions (billing.services.credit).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from functools import cache as once
from typing import Any, TypeVar

from django.conf import settings
from django.core.cache import cache
from django.db import IntegrityError, connection, transaction
from django.db.models import QuerySet

from attest.models import SharedState
from attest.prepared import PreparedQuery, columns, first_of, prepared, run

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
        raw = redis_connection().get(_redis_key(key))
        return None if raw is None else json.loads(raw)
    rows = _LIVE.rows(None, key=key, now=_now())
    return rows[0].value if rows else None


def redis_connection():
    """The shared Redis (only when ``in_redis()``)."""
    from django_redis import get_redis_connection

    return get_redis_connection("default")


@once
def _script(source: str) -> Any:
    # Registered once per process (redis-py sends EVALSHA, and the source only when the
    # server does not know it yet); the client is given at each call.
    return redis_connection().register_script(source)


def run_script(source: str, key: str, args: Sequence[str | int | float]) -> Any:
    """Run the Lua ``source`` on the state under ``key`` in Redis (only when ``in_redis()``):
    one round trip, and no other client's command comes between its reads and writes.
    The state is the same JSON ``change_state`` keeps, so either may change it."""
    return _script(source)(keys=[_redis_key(key)], args=list(args), client=redis_connection())


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
    return redis_connection().transaction(attempt, full_key, value_from_callable=True)


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
        rows = _LOCKED.rows(None, key=key)
        row = rows[0] if rows else None
        state = row.value if row is not None and row.expires_at > now else None
        new, result = change(state)
        expires = now + timedelta(seconds=keep_seconds)
        if new is None:
            if row is not None:
                row.delete()
        elif row is not None:
            run(_update_sql(), _update_params(key, new, expires))
        else:
            SharedState.objects.create(key=key, value=new, expires_at=expires)
            # A new key (a new caller's bucket) is when the table grows: drop lapsed rows.
            SharedState.objects.filter(expires_at__lte=now).delete()
    return result


# The database store's statements, compiled once (attest.prepared): Django compiled each
# queryset anew on every change, twice a paid call, for a text that never changes.


def _live(_: None, *, key: str, now: datetime) -> QuerySet[SharedState]:
    return first_of(SharedState.objects.filter(key=key, expires_at__gt=now))


def _locked(_: None, *, key: str) -> QuerySet[SharedState]:
    return first_of(SharedState.objects.select_for_update().filter(key=key))


_LIVE = PreparedQuery(_live, key=str, now=datetime)
_LOCKED = PreparedQuery(_locked, locking=True, key=str)


@once
def _update_sql() -> str:
    """``SharedState.objects.filter(key=key).update(value=..., expires_at=...)``."""
    value, expires_at, key = columns(SharedState, "value", "expires_at", "key")
    table = connection.ops.quote_name(SharedState._meta.db_table)
    return f"UPDATE {table} SET {value} = %s, {expires_at} = %s WHERE {key} = %s"


def _update_params(key: str, value: Any, expires: datetime) -> list[Any]:
    return prepared(SharedState, value=value, expires_at=expires, key=key)
