"""The audit log: one hash chain per project of who did what to which IDs, never content."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from citations.models import AuditEvent, Project
from citations.services.rows import sends_statements_together
from receipts.log import latest_audit_head, log_append_audit_head

GENESIS_HASH = "0" * 64


def audit_body(
    *,
    project_id: int,
    seq: int,
    operation: str,
    actor: str,
    object_ids: Sequence[str],
    source_count: int,
    request_id: str,
    created_at: datetime,
    outcome: str | None,
) -> str:
    """The canonical JSON of one event, which its hash covers after the previous hash."""
    body: dict = {
        "project": project_id,
        "seq": seq,
        "operation": operation,
        "actor": actor,
        "object_ids": list(object_ids),
        "source_count": source_count,
        "request_id": request_id,
        "created_at": created_at.isoformat(),
    }
    if outcome is not None:  # events from before outcomes were kept hash without one
        body["outcome"] = outcome
    return json.dumps(body, sort_keys=True, separators=(",", ":"))


def audit_digest(*, prev_hash: str, **fields: Any) -> str:
    """The hash of one event chained to the one before: the writer and the check share it."""
    return _chained(prev_hash, audit_body(**fields))


def _chained(prev_hash: str, body: str) -> str:
    return hashlib.sha256((prev_hash + body).encode()).hexdigest()


def event_body(event: AuditEvent, *, seq: int) -> str:
    """``event``'s canonical JSON, with ``seq`` in place of its own (see _append_once)."""
    return audit_body(
        project_id=event.project_id,
        seq=seq,
        operation=event.operation,
        actor=event.actor,
        object_ids=event.object_ids,
        source_count=event.source_count,
        request_id=event.request_id,
        created_at=event.created_at,
        outcome=event.outcome,
    )


def event_digest(event: AuditEvent, *, prev_hash: str) -> str:
    """What ``event``'s hash must be if nothing about it changed since it was written."""
    return _chained(prev_hash, event_body(event, seq=event.seq))


def audit_record(
    *,
    project: Project,
    operation: str,
    actor: str,
    object_ids: Sequence[str],
    source_count: int = 0,
    request_id: str = "",
    outcome: str = "ok",
) -> AuditEvent:
    """Append one event to the project's hash chain (IDs and counts only, never content).

    The event is committed when this returns: with the caller's transaction when there is
    one, in a statement of its own otherwise.
    """
    event = AuditEvent(
        project=project,
        operation=operation,
        actor=actor,
        object_ids=[str(value) for value in object_ids],
        source_count=source_count,
        request_id=request_id,
        outcome=outcome,
    )
    if connection.vendor == "postgresql":
        event = _append_postgresql(event)
    else:
        with transaction.atomic(savepoint=False):
            # The project row is the chain's lock: concurrent writers take turns for ``seq``.
            Project.objects.select_for_update().filter(pk=project.pk).first()
            last = AuditEvent.objects.for_project(project).order_by("-seq").first()
            event.seq = last.seq + 1 if last else 1
            event.prev_hash = last.hash if last else GENESIS_HASH
            event.created_at = timezone.now()
            event.hash = event_digest(event, prev_hash=event.prev_hash)
            event.save()
    # Once the event is committed, the chain's head goes into the transparency log: after
    # the commit, so no ledger transaction holds the log's next index; at most once per
    # ATTEST_AUDIT_HEAD_INTERVAL seconds a project, so a read the ledger audits does not
    # pay a log append each time. Events past the logged head (that interval's, or a
    # crash's between commit and append) are reported by the chain check as not yet
    # logged (and ``verify_audit_chain --log-heads`` logs them), never as intact-and-logged.
    key = (event.project_id, project.created_at)
    if _head_due(key):
        transaction.on_commit(lambda: _head_log_when_due(key))
    return event


# When this process last logged each project's chain head (time.monotonic()), by the
# project's ID and creation time (an ID alone can come back after a rolled-back one).
_heads_logged: dict[tuple[int, datetime], float] = {}
_heads_lock = threading.Lock()


def _head_due(project: tuple[int, datetime]) -> bool:
    """Whether this process has not logged the project's head within the interval."""
    last = _heads_logged.get(project)
    interval = settings.ATTEST_AUDIT_HEAD_INTERVAL
    return not (interval and last is not None and time.monotonic() - last < interval)


def _head_log_when_due(project: tuple[int, datetime]) -> None:
    """Once the event commits: log the project's head if it is still due, and mark it.

    Marked here, not when the event is written: an event whose transaction rolls back
    schedules nothing, so it cannot hold the next head back for an interval. The mark is
    taken before the append (the commit's other events then skip it) and given back if
    the append fails.
    """
    with _heads_lock:
        if not _head_due(project):
            return
        before = _heads_logged.get(project)
        _heads_logged[project] = time.monotonic()
    try:
        audit_head_log(project_id=project[0])
    except Exception:
        with _heads_lock:
            if before is None:
                _heads_logged.pop(project, None)
            else:
                _heads_logged[project] = before
        raise


def audit_head_log(*, project_id: int) -> int | None:
    """Log the project's current chain head unless the log holds it already; its index."""
    last = (
        AuditEvent.objects.filter(project_id=project_id)
        .order_by("-seq")
        .only("seq", "hash")
        .first()
    )
    logged = latest_audit_head(project=project_id)
    if last is None or (logged is not None and logged["seq"] >= last.seq):
        return None
    return log_append_audit_head(project=project_id, seq=last.seq, head_hash=last.hash)


# The chain's next link in one statement: the project row is locked first (so a writer in
# a longer transaction that holds it is waited for), then the last event is read and the
# new one written with ``seq`` one more and the SHA-256 of audit_digest over the previous
# hash. The body around ``seq`` comes from audit_digest itself (see _append_postgresql).
_APPEND = f"""
WITH chain_lock AS (
    SELECT id FROM citations_project WHERE id = %(project)s FOR UPDATE
), last AS (
    SELECT coalesce(event.seq, 0) AS seq, coalesce(event.hash, '{GENESIS_HASH}') AS hash
    FROM (SELECT 1) AS chain LEFT JOIN LATERAL (
        SELECT seq, hash FROM citations_auditevent WHERE project_id = %(project)s
        ORDER BY seq DESC LIMIT 1
    ) AS event ON true
)
INSERT INTO citations_auditevent (project_id, seq, operation, actor, object_ids, source_count,
    request_id, outcome, created_at, prev_hash, hash)
SELECT chain_lock.id, last.seq + 1, %(operation)s, %(actor)s, %(object_ids)s::jsonb,
    %(source_count)s, %(request_id)s, %(outcome)s, %(created_at)s, last.hash,
    encode(sha256(convert_to(
        last.hash || %(before_seq)s || (last.seq + 1)::text || %(after_seq)s, 'UTF8'
    )), 'hex')
FROM chain_lock, last
RETURNING id, seq, prev_hash, hash
"""
_SEQ_MARK = 987654321987654321  # stands for seq in the body until the database knows it


def _append_postgresql(event: AuditEvent) -> AuditEvent:
    """Append ``event`` with one statement, and check its hash as audit_digest computes it.

    Outside a transaction the statement is its own, durable when it returns. Its read of
    the last event may predate a writer it waited for at the lock; then the unique
    ``(project, seq)`` refuses the stale link (the chain never forks) and the append is
    made again the way it is inside a transaction: the lock taken first, in a statement of
    its own (sent with the append where the driver takes both at once), so that the read
    after it sees every event before.
    """
    if not connection.in_atomic_block:
        try:
            return _append_once(event)
        except IntegrityError as error:
            constraint = getattr(getattr(error.__cause__, "diag", None), "constraint_name", "")
            if constraint != "auditevent_unique_seq":
                raise
    with transaction.atomic(savepoint=False):
        if sends_statements_together():
            # The lock, then the append, in one round trip: each statement of the string
            # still takes its own snapshot, so the append's read follows the lock's wait.
            return _append_once(event, lock_first=True)
        with connection.cursor() as cursor:
            cursor.execute(_LOCK, {"project": event.project_id})
        return _append_once(event)


_LOCK = "SELECT 1 FROM citations_project WHERE id = %(project)s FOR UPDATE"


def _append_once(event: AuditEvent, *, lock_first: bool = False) -> AuditEvent:
    event.created_at = timezone.now()
    body = event_body(event, seq=_SEQ_MARK)
    before_seq, after_seq = body.split(f'"seq":{_SEQ_MARK}')
    with connection.cursor() as cursor:
        cursor.execute(
            f"{_LOCK};\n{_APPEND}" if lock_first else _APPEND,
            {
                "project": event.project_id,
                "operation": event.operation,
                "actor": event.actor,
                "object_ids": json.dumps(event.object_ids),
                "source_count": event.source_count,
                "request_id": event.request_id,
                "outcome": event.outcome,
                "created_at": event.created_at,
                "before_seq": before_seq + '"seq":',
                "after_seq": after_seq,
            },
        )
        if lock_first:
            cursor.nextset()
        event.pk, event.seq, event.prev_hash, event.hash = cursor.fetchone()
    # The database hashed ASCII text that audit_digest hashes too, so the two agree; were
    # they ever to differ, the call fails (inside a transaction, the event rolls back with
    # it) and the chain check names the event.
    if event.hash != event_digest(event, prev_hash=event.prev_hash):
        raise RuntimeError(f"audit event {event.seq}: the database's hash is not audit_digest's")
    event._state.adding = False
    event._state.db = connection.alias
    return event


@dataclass(frozen=True)
class ChainBreak:
    """The first event of a project's chain that does not follow from the ones before."""

    seq: int
    reason: str


def audit_chain_first_break(*, project: Project) -> ChainBreak | None:
    """Recompute the project's chain; the first removed, reordered or altered link, if any.

    The chain's end is checked against the head the transparency log holds for it, so
    removing the last events (which leaves a chain that recomputes) is found too.
    """
    logged = latest_audit_head(project=project.pk)
    prev_hash = GENESIS_HASH
    last_seq, hash_at_logged = 0, None
    for expected_seq, event in enumerate(
        AuditEvent.objects.for_project(project).order_by("seq").iterator(), start=1
    ):
        if event.seq != expected_seq:
            return ChainBreak(expected_seq, f"event {expected_seq} is missing")
        if event.prev_hash != prev_hash:
            return ChainBreak(event.seq, "its previous hash is not the previous event's hash")
        if event.hash != event_digest(event, prev_hash=prev_hash):
            return ChainBreak(event.seq, "its content does not match its hash")
        prev_hash, last_seq = event.hash, event.seq
        if logged is not None and event.seq == logged["seq"]:
            hash_at_logged = event.hash
    if logged is None:
        return None
    if last_seq < logged["seq"]:
        return ChainBreak(
            last_seq + 1,
            f"the chain ends at event {last_seq}, but the transparency log holds its head at "
            f"event {logged['seq']} (leaf {logged['index']}): the events after were removed",
        )
    if hash_at_logged != logged["hash"]:
        return ChainBreak(
            logged["seq"],
            f"its hash is not the head the transparency log holds (leaf {logged['index']})",
        )
    return None


def audit_chain_unlogged(*, project: Project) -> int:
    """How many of the project's last events are past the head the log holds (not yet logged)."""
    last = AuditEvent.objects.for_project(project).order_by("-seq").only("seq").first()
    logged = latest_audit_head(project=project.pk)
    return max(0, (last.seq if last else 0) - (logged["seq"] if logged else 0))


def audit_chain_intact(*, project: Project) -> bool:
    """True when no event of the project's chain was removed, reordered or altered."""
    return audit_chain_first_break(project=project) is None


def audit_failure(
    *,
    project: Project,
    operation: str,
    actor: str,
    object_ids: Sequence[str],
    outcome: str,
    request_id: str = "",
) -> AuditEvent:
    """Record an operation that was refused or failed, in its own transaction.

    Called after the operation's own transaction rolled back, so the event is kept.
    """
    with transaction.atomic():
        return audit_record(
            project=project,
            operation=operation,
            actor=actor,
            object_ids=object_ids,
            request_id=request_id,
            outcome=outcome,
        )
