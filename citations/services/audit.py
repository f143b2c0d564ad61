"""The audit log: one hash chain per project of who did what to which IDs, never content."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
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
) -> str:
    """The hash of one event chained to the one before: the writer and the check share it."""
    body = {
        "project": project_id,
        "seq": seq,
        "operation": operation,
        "actor": actor,
        "object_ids": list(object_ids),
        "source_count": source_count,
        "request_id": request_id,
        "created_at": created_at.isoformat(),
    }
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
    )


def audit_record(
    *,
    project: Project,
    operation: str,
    actor: str,
    object_ids: Sequence[str],
    source_count: int = 0,
    request_id: str = "",
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
            created_at=timezone.now(),
            prev_hash=last.hash if last else GENESIS_HASH,
        )
        event.hash = event_digest(event, prev_hash=event.prev_hash)
        event.save()
        return event


def audit_chain_intact(*, project: Project) -> bool:
    """Recompute the project's chain; False if any row was removed, reordered or altered."""
    prev_hash = GENESIS_HASH
    for expected_seq, event in enumerate(
        AuditEvent.objects.for_project(project).order_by("seq").iterator(), start=1
    ):
        if (
            event.seq != expected_seq
            or event.prev_hash != prev_hash
            or event.hash != event_digest(event, prev_hash=prev_hash)
        ):
            return False
        prev_hash = event.hash
    return True
