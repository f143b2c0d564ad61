"""The audit log: one hash chain per project of who did what to which IDs, never content."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from citations.models import AuditEvent, Project

GENESIS_HASH = "0" * 64


def audit_digest(
    *,
    prev_hash: str,
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
    """The hash of one event chained to the one before: the writer and the check share it."""
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
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256((prev_hash + canonical).encode()).hexdigest()


def event_digest(event: AuditEvent, *, prev_hash: str) -> str:
    """What ``event``'s hash must be if nothing about it changed since it was written."""
    return audit_digest(
        prev_hash=prev_hash,
        project_id=event.project_id,
        seq=event.seq,
        operation=event.operation,
        actor=event.actor,
        object_ids=event.object_ids,
        source_count=event.source_count,
        request_id=event.request_id,
        created_at=event.created_at,
        outcome=event.outcome,
    )


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
    """Append one event to the project's hash chain (IDs and counts only, never content)."""
    with transaction.atomic():
        # The project row is the chain's lock: concurrent writers take turns for ``seq``.
        Project.objects.select_for_update().filter(pk=project.pk).first()
        last = AuditEvent.objects.for_project(project).order_by("-seq").first()
        event = AuditEvent(
            project=project,
            seq=last.seq + 1 if last else 1,
            operation=operation,
            actor=actor,
            object_ids=[str(value) for value in object_ids],
            source_count=source_count,
            request_id=request_id,
            outcome=outcome,
            created_at=timezone.now(),
            prev_hash=last.hash if last else GENESIS_HASH,
        )
        event.hash = event_digest(event, prev_hash=event.prev_hash)
        event.save()
        return event


@dataclass(frozen=True)
class ChainBreak:
    """The first event of a project's chain that does not follow from the ones before."""

    seq: int
    reason: str


def audit_chain_first_break(*, project: Project) -> ChainBreak | None:
    """Recompute the project's chain; the first removed, reordered or altered link, if any."""
    prev_hash = GENESIS_HASH
    for expected_seq, event in enumerate(
        AuditEvent.objects.for_project(project).order_by("seq").iterator(), start=1
    ):
        if event.seq != expected_seq:
            return ChainBreak(expected_seq, f"event {expected_seq} is missing")
        if event.prev_hash != prev_hash:
            return ChainBreak(event.seq, "its previous hash is not the previous event's hash")
        if event.hash != event_digest(event, prev_hash=prev_hash):
            return ChainBreak(event.seq, "its content does not match its hash")
        prev_hash = event.hash
    return None


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
