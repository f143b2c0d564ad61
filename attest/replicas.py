"""Read replicas: which reads may leave the primary, which replica serves them, and when.

Only blocks that ask for it read from a replica (``replica_reads``): the ledger's reads and
the log's proofs. Everything else, every write and every read of a block that did not ask
(the audit chain's head, a payment's claim, anything inside a write), goes to the primary:
the router sends a read to a replica only inside such a block.

Read-your-writes: after a request wrote a project's ledger, the primary's WAL position is
kept in the shared cache under the project (``record_write``); a replica serves that
project only once its replay position has passed it. A replica that does not answer, or
is further behind than ATTEST_REPLICA_MAX_LAG seconds, is skipped; with none left the
primary serves, so a replica's outage is never the caller's error.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

from django.conf import settings
from django.core.cache import cache
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections

from attest.errors import cache_outages

logger = logging.getLogger("attest.replicas")

T = TypeVar("T")

# The alias the current replica_reads block reads from (None outside one: the primary).
_reading_from: ContextVar[str | None] = ContextVar("replica_reading_from", default=None)

# One query tells whether a replica may serve: it is a standby, its replay has passed the
# project's last write, and how far behind it is. A standby whose replay has caught up with
# all it received is not behind however long ago the primary last wrote.
_STATE = """
SELECT pg_is_in_recovery(),
       pg_last_wal_replay_lsn() >= %s::pg_lsn,
       CASE WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0
            ELSE COALESCE(EXTRACT(EPOCH FROM now() - pg_last_xact_replay_timestamp()), 0)
       END
"""
_ORIGIN = "0/0"
# How long a project's last write position is kept: far longer than any replica allowed to
# serve may lag, so a replica within ATTEST_REPLICA_MAX_LAG has replayed it by then.
_KEEP_SECONDS = 600


def replica_aliases() -> list[str]:
    return [alias for alias in settings.DATABASES if alias.startswith("replica_")]


def _write_key(scope: str) -> str:
    return f"replica:written:{scope}"


def record_write(scope: str) -> None:
    """After a committed write of ``scope`` (a project), keep the primary's WAL position so
    no replica serves the scope a state from before it. Nothing to do without replicas."""
    if not replica_aliases():
        return
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute("SELECT pg_current_wal_lsn()::text")
        position = cursor.fetchone()[0]
    try:
        cache.set(_write_key(scope), position, timeout=_KEEP_SECONDS)
    except cache_outages() as exc:
        # The write is committed and its answer must say so; a read finds Redis down too
        # and goes to the primary (the ledger's own limit fails closed without Redis).
        logger.warning("replicas.position_not_kept", extra={"scope": scope, "error": str(exc)})


def serving_replica(scope: str | None) -> str | None:
    """A replica that may serve ``scope`` now, or None (then the primary serves)."""
    aliases = replica_aliases()
    if not aliases:
        return None
    try:
        written = (cache.get(_write_key(scope)) if scope else None) or _ORIGIN
    except cache_outages():
        return None  # the last write's position is unknown: only the primary is safe
    random.shuffle(aliases)  # spread the reads over the replicas
    for alias in aliases:
        if _may_serve(alias, written):
            return alias
    return None


def _may_serve(alias: str, written: str) -> bool:
    try:
        with connections[alias].cursor() as cursor:
            cursor.execute(_STATE, [written])
            standby, caught_up, lag = cursor.fetchone()
    except DatabaseError as exc:
        logger.warning("replicas.skipped", extra={"replica": alias, "reason": str(exc)[:200]})
        connections[alias].close()  # the next request connects afresh
        return False
    return bool(standby and caught_up and float(lag) <= settings.ATTEST_REPLICA_MAX_LAG)


@contextmanager
def replica_reads(scope: str | None) -> Iterator[str]:
    """Let the block's reads go to a replica that may serve ``scope`` (a project; None for
    data without one, such as the log); yields the alias chosen (the primary's when none).
    Nested inside another such block, the outer one's choice stands."""
    chosen = _reading_from.get()
    if chosen is not None:
        yield chosen
        return
    alias = serving_replica(scope) or DEFAULT_DB_ALIAS
    token = _reading_from.set(alias)
    try:
        yield alias
    finally:
        _reading_from.reset(token)


def replica_stream(scope: str | None, items: Generator[T, None, None]) -> Iterator[T]:
    """A streamed read (``items``, a generator not yet started) as a ``replica_reads``
    block: the replica is chosen once, before the first item, and the generator's reads go
    there only while it makes an item. Between items the caller's code (the view, the
    middleware, the server writing the item out) reads the primary as anywhere else, which
    ``replica_reads`` entered inside the generator itself would not give: its choice would
    stay set in the caller's context from one item to the next."""
    alias = _reading_from.get() or serving_replica(scope) or DEFAULT_DB_ALIAS
    try:
        while True:
            token = _reading_from.set(alias)
            try:
                item = next(items)
            except StopIteration:
                return
            finally:
                _reading_from.reset(token)
            yield item
    finally:
        items.close()  # a stream cut short ends its transaction now, not when collected


def reading_from() -> str:
    """The alias reads go to here: a replica inside ``replica_reads``, else the primary."""
    return _reading_from.get() or DEFAULT_DB_ALIAS


class ReplicaRouter:
    """Reads go to the replica ``replica_reads`` chose; writes and migrations to the primary."""

    def db_for_read(self, model: Any, **hints: Any) -> str | None:
        return _reading_from.get()

    def db_for_write(self, model: Any, **hints: Any) -> str:
        return DEFAULT_DB_ALIAS

    def allow_relation(self, obj1: Any, obj2: Any, **hints: Any) -> bool:
        return True  # one database, whichever copy an object was read from

    def allow_migrate(self, db: str, app_label: str, **hints: Any) -> bool:
        return db == DEFAULT_DB_ALIAS
