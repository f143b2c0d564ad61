"""Retraction and correction: withdraw a fact (closing its known time), optionally replace it."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import datetime

from django.db import transaction

from attest.errors import AttestError, NotFound
from citations.models import Evidence, Fact, FactVersion, Project, Retraction
from citations.selectors import ResolvedCitation, resolved_citation
from citations.services.audit import audit_record
from citations.services.authoring import AuthoredStatement, locked_subject, write_authored
from citations.services.placement import LedgerWrite, ingest_generation, move_evidence
from citations.services.predicates import predicate_cardinality
from citations.services.reads import read_snapshot
from citations.services.timeline import close_knowledge, known_now, revise


class AlreadyRetracted(AttestError):
    status_code = 409
    code = "already_retracted"
    message = "This fact was already retracted; the first retraction stands."


class FactNotBelieved(AttestError):
    status_code = 409
    code = "fact_not_believed"
    message = "The ledger no longer believes this fact (a rebuild or a merge closed it)."


def fact_retract(
    *,
    project: Project,
    fact_id: str | uuid.UUID,
    reason: str,
    actor: str,
    replacement: AuthoredStatement | None = None,
    request_id: str = "",
) -> ResolvedCitation:
    """Retract (see ``retraction_record``) and show the fact as resolve does."""
    retraction_record(
        project=project,
        fact_id=fact_id,
        reason=reason,
        actor=actor,
        replacement=replacement,
        request_id=request_id,
    )
    with read_snapshot():
        return resolved_citation(project=project, fact_id=uuid.UUID(str(fact_id)))


def retraction_record(
    *,
    project: Project,
    fact_id: str | uuid.UUID,
    reason: str,
    actor: str,
    replacement: AuthoredStatement | None = None,
    request_id: str = "",
) -> Retraction:
    """Withdraw a fact: its known time closes, with who, when, why and any replacement.

    Facts whose validity the withdrawn fact had closed hold again over its span (a
    split-off restatement of the same value merges back), then a replacement, if any,
    takes its place on the timeline like an authored record by the retracting person.
    """
    with transaction.atomic():
        fact = _believable_fact(project, fact_id)
        if replacement is not None and replacement.predicate:
            # A declared predicate is as good as a built-in one; any other is refused first.
            predicate_cardinality(
                project=project, name=replacement.predicate, field="replacement.predicate"
            )
        subject = locked_subject(project, fact.subject.external_id)
        version = _believed_version(fact)
        now = known_now(project, subject)
        retraction = Retraction.objects.create(
            project=project, fact=fact, retracted_by=actor, retracted_at=now, reason=reason
        )
        close_knowledge(version, now=now, retraction=retraction)
        if fact.functional:
            _restore_predecessors(version, now=now)
        if replacement is not None:
            ctx = LedgerWrite(project, subject, ingest_generation(project), now, authored_by=actor)
            replacement = replace(
                replacement,
                predicate=replacement.predicate or fact.predicate,
                valid_from=replacement.valid_from or version.valid_from,
            )
            retraction.replacement = write_authored(ctx, replacement)
            Retraction.objects.filter(pk=retraction.pk).update(replacement=retraction.replacement)
        audit_record(
            project=project,
            operation="fact.retract",
            actor=actor,
            object_ids=[
                str(fact.pk),
                str(retraction.pk),
                *([str(retraction.replacement_id)] if retraction.replacement_id else []),
            ],
            request_id=request_id,
        )
    return retraction


def _believable_fact(project: Project, fact_id: str | uuid.UUID) -> Fact:
    fact = (
        Fact.objects.for_project(project)
        .select_related("subject")
        .filter(pk=fact_id, erased_at__isnull=True, subject__erased_at__isnull=True)
        .first()
    )
    if fact is None:
        raise NotFound("No fact with this ID exists in this project.")
    return fact


def _believed_version(fact: Fact) -> FactVersion:
    # Read under the subject lock: a racing retraction or supersession has finished.
    version = FactVersion.objects.filter(fact=fact).order_by("-seq").first()
    assert version is not None  # a fact is written with its first version
    if version.retraction_id is not None:
        raise AlreadyRetracted(details={"retraction_id": str(version.retraction_id)})
    if version.known_until is not None:
        raise FactNotBelieved(details={"status": version.status})
    return version


def _restore_predecessors(withdrawn: FactVersion, *, now: datetime) -> None:
    """What the withdrawn fact closed holds again until where the withdrawn fact ended."""
    successor = None
    if withdrawn.superseded_by_id is not None:
        successor = FactVersion.objects.filter(
            fact_id=withdrawn.superseded_by_id, known_until__isnull=True
        ).first()
    predecessors = FactVersion.objects.filter(
        superseded_by=withdrawn.fact, known_until__isnull=True
    ).select_related("fact")
    for predecessor in predecessors:
        if successor is not None and successor.fact.value_key == predecessor.fact.value_key:
            # The next fact restates the predecessor's value (a split): one fact again.
            _merge(predecessor, successor, now=now)
            continue
        revise(
            predecessor,
            now=now,
            valid_until=withdrawn.valid_until,
            valid_until_inclusive=withdrawn.valid_until_inclusive,
            superseded_by=withdrawn.superseded_by,
            supersession_source_observation=withdrawn.supersession_source_observation,
        )


def _merge(predecessor: FactVersion, successor: FactVersion, *, now: datetime) -> None:
    """The successor stops being believed as a fact of its own; its sources join the first."""
    close_knowledge(successor, now=now)
    sources = list(
        Evidence.objects.filter(fact=successor.fact, known_until__isnull=True).select_related(
            "observation"
        )
    )
    ctx = LedgerWrite(predecessor.project, predecessor.subject, predecessor.fact.generation, now)
    move_evidence(ctx, sources, predecessor.fact)
    revise(
        predecessor,
        now=now,
        valid_until=successor.valid_until,
        valid_until_inclusive=successor.valid_until_inclusive,
        superseded_by=successor.superseded_by,
        supersession_source_observation=successor.supersession_source_observation,
    )
