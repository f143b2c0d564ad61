"""The subject export: every live row about one subject, as NDJSON, from one snapshot.

One line a row, in this order: the subject, its messages (with their text), its facts
(each as resolve shows it now, with its whole version history), their evidence (the
quote re-read from the message bytes and checked), retractions, the generations that
admitted or retired its facts, and a closing ``end`` line with the counts, so a client
can tell a complete export from a cut connection. Erased rows are tombstones and are
never exported.

Memory stays flat however large the subject: rows come from the database in chunks
(a server-side cursor on PostgreSQL) and each line is written as soon as it is built.
All of it is read in one transaction: REPEATABLE READ on PostgreSQL, a deferred read
transaction on SQLite (WAL keeps its snapshot and lets writers go on). Like the ledger's
other reads, it comes from a read replica that has replayed the project's last write, when
there is one (attest.replicas).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Generator, Iterator, Mapping
from contextlib import contextmanager
from functools import partial
from typing import Any

from django.db import connections, models, transaction
from django.db.models import F
from django.db.models.functions import Substr
from django.utils import timezone

from attest.errors import NotFound, client_code
from attest.replicas import reading_from, replica_stream
from citations.models import (
    Evidence,
    EvidenceKind,
    FactVersion,
    Generation,
    Observation,
    Project,
    Retraction,
    WebSource,
)
from citations.models import Subject as SubjectModel
from citations.selectors import EvidenceMismatch, FactView, fact_view, iso_utc
from citations.selectors.web_evidence import source_retracted, web_source_intact
from citations.services.audit import audit_failure, audit_record
from citations.services.rebuilds import KIND_NAMES
from citations.services.tenancy import subject_get_live

logger = logging.getLogger("attest.citations")

CHUNK = 500
# Messages can be 1 MiB each: fewer of them per fetch keeps the peak bounded.
MESSAGE_CHUNK = 64
LINE_TYPES = ("subject", "observation", "fact", "evidence", "retraction", "generation", "end")


@contextmanager
def export_snapshot() -> Iterator[None]:
    """One read transaction that sees a single committed state for the whole stream, on the
    database the stream reads from (a replica inside ``replica_stream``)."""
    alias = reading_from()
    connection = connections[alias]
    if connection.vendor == "sqlite" and not connection.in_atomic_block:
        connection.ensure_connection()
        mode = getattr(connection, "transaction_mode", None)
        # django-stubs lacks SQLite's transaction_mode (Django 5.1), hence the ignores.
        connection.transaction_mode = "DEFERRED"  # type: ignore[attr-defined]
        try:
            with transaction.atomic(using=alias):
                yield
        finally:
            connection.transaction_mode = mode  # type: ignore[attr-defined]
        return
    outermost = not connection.in_atomic_block
    with transaction.atomic(using=alias):
        if outermost and connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        yield


def _line(kind: str, body: dict) -> bytes:
    return (
        json.dumps({"type": kind, **body}, ensure_ascii=False, separators=(",", ":")).encode()
        + b"\n"
    )


def subject_export(
    *,
    project: Project,
    subject_id: str,
    actor: str,
    render_fact: Callable[[FactView], Mapping[str, Any]],
    request_id: str = "",
) -> Iterator[bytes]:
    """Check the subject, audit the export, and return its lines (already in the snapshot).

    ``render_fact`` is the API's rendering of a fact as resolve shows it (its output
    serializer's), so a fact line and resolve's answer cannot drift apart.

    The first line is produced before this returns, so an unknown or erased subject is a
    404 rather than an empty stream.
    """
    subject = subject_get_live(project=project, subject_id=subject_id)
    with transaction.atomic():
        audit_record(
            project=project,
            operation="subject.export",
            actor=actor,
            object_ids=[str(subject.pk)],
            request_id=request_id,
        )
    lines = replica_stream(str(project.pk), _lines(project, subject.pk, render_fact))
    first = next(lines)
    return _chain(
        first,
        lines,
        audit_cut_short=partial(
            audit_failure,
            project=project,
            operation="subject.export",
            actor=actor,
            object_ids=[str(subject.pk)],
            request_id=request_id,
        ),
    )


def _chain(
    first: bytes, rest: Iterator[bytes], *, audit_cut_short: Callable[..., object]
) -> Iterator[bytes]:
    yield first
    try:
        yield from rest
    except Exception as exc:
        # The response has started, so the view's error path never sees this: record it
        # here, after the snapshot rolled back, then let the stream end without its end line.
        try:
            audit_cut_short(outcome=client_code(exc))
        except Exception:  # the original error is what the server must see
            logger.exception("could not audit a subject export cut short")
        raise


def _lines(
    project: Project, subject_pk: int, render_fact: Callable[[FactView], Mapping[str, Any]]
) -> Generator[bytes, None, None]:
    with export_snapshot():
        subject = (
            SubjectModel.objects.for_project(project)
            .filter(pk=subject_pk, erased_at__isnull=True)
            .first()
        )
        if subject is None:  # erased between the check and the snapshot
            raise NotFound("No subject with this ID exists in this project.")
        counts = dict.fromkeys(LINE_TYPES[1:-1], 0)
        yield _line(
            "subject",
            {
                "id": subject.external_id,
                "created_at": iso_utc(subject.created_at),
                "exported_at": iso_utc(timezone.now()),
            },
        )
        for line in _observations(project, subject):
            counts["observation"] += 1
            yield line
        generations: set[int] = set()
        for line in _facts(project, subject, generations, render_fact):
            counts["fact"] += 1
            yield line
        for line in _evidence(project, subject):
            counts["evidence"] += 1
            yield line
        for line in _retractions(project, subject):
            counts["retraction"] += 1
            yield line
        for generation in (
            Generation.objects.for_project(project).filter(pk__in=generations).order_by("pk")
        ):
            counts["generation"] += 1
            yield _line(
                "generation",
                {
                    "id": generation.pk,
                    "kind": KIND_NAMES.get(generation.kind, generation.kind),
                    "state": generation.state,
                    "extractor_version": generation.extractor_version,
                    "created_at": iso_utc(generation.created_at),
                },
            )
        yield _line("end", {"counts": counts})


def _observations(project: Project, subject: SubjectModel) -> Iterator[bytes]:
    rows = (
        Observation.objects.for_project(project)
        .filter(subject=subject, erased_at__isnull=True)
        .order_by("occurred_at", "message_id", "ordinal")
    )
    for observation in rows.iterator(chunk_size=MESSAGE_CHUNK):
        content = bytes(observation.content)
        if hashlib.sha256(content).hexdigest() != observation.content_sha256:
            raise EvidenceMismatch(details={"observation_id": str(observation.pk)})
        yield _line(
            "observation",
            {
                "id": str(observation.pk),
                "message_id": observation.message_id,
                "role": observation.role,
                "occurred_at": iso_utc(observation.occurred_at),
                "received_at": iso_utc(observation.received_at),
                "session": observation.session,
                "ordinal": observation.ordinal,
                "sha256": observation.content_sha256,
                "text": content.decode("utf-8"),
            },
        )


def _version_json(version: FactVersion) -> dict:
    return {
        "seq": version.seq,
        "status": version.status,
        "valid_from": iso_utc(version.valid_from),
        "valid_until": iso_utc(version.valid_until),
        "known_from": iso_utc(version.known_from),
        "known_until": iso_utc(version.known_until),
        "superseded_by": str(version.superseded_by_id) if version.superseded_by_id else None,
        "retraction_id": str(version.retraction_id) if version.retraction_id else None,
        "reinterpreted_by": version.reinterpreted_by_id,
    }


def _facts(
    project: Project,
    subject: SubjectModel,
    generations: set[int],
    render_fact: Callable[[FactView], Mapping[str, Any]],
) -> Iterator[bytes]:
    """One line a fact: its latest version as resolve shows it, and every version."""
    rows = (
        FactVersion.objects.for_project(project)
        .filter(subject=subject, fact__erased_at__isnull=True)
        .select_related("fact", "fact__subject", "retraction")
        .order_by("fact_id", "seq")
    )
    history: list[FactVersion] = []
    for version in rows.iterator(chunk_size=CHUNK):
        if history and history[-1].fact_id != version.fact_id:
            yield _fact_line(render_fact, history, generations)
            history = []
        history.append(version)
    if history:
        yield _fact_line(render_fact, history, generations)


def _fact_line(
    render_fact: Callable[[FactView], Mapping[str, Any]],
    history: list[FactVersion],
    generations: set[int],
) -> bytes:
    latest = history[-1]
    generations.add(latest.fact.generation_id)
    generations.update(v.reinterpreted_by_id for v in history if v.reinterpreted_by_id)
    body = dict(render_fact(fact_view(latest)))
    body["versions"] = [_version_json(version) for version in history]
    return _line("fact", body)


# A message's byte range: a web quote's place is its page offsets instead.
MESSAGE_SPAN = ("byte_start", "byte_end")


def web_source_json(web: WebSource) -> dict:
    """A web evidence line's page and receipt, as resolve shows them."""
    return {
        "url": web.url,
        "final_url": web.final_url,
        "route": web.route,
        "match": web.match,
        "start": web.start,
        "end": web.end,
        "pdf_page": web.pdf_page,
        "pdf_page_end": web.pdf_page_end,
        "content_sha256": web.content_sha256,
        "normalised_sha256": web.normalised_sha256,
        "retrieved_at": iso_utc(web.retrieved_at),
        "doi": web.doi,
        "doi_status": web.doi_status,
        "source_retracted": source_retracted(web),
        "receipt": web.receipt,
        "receipt_index": web.receipt_index,
        "receipt_log_index": web.receipt_log_index,
    }


def _evidence(project: Project, subject: SubjectModel) -> Iterator[bytes]:
    """Evidence with its quote cut from the message by the database, then checked here."""
    rows = (
        Evidence.objects.for_project(project)
        .filter(
            fact__subject=subject,
            fact__erased_at__isnull=True,
            observation__erased_at__isnull=True,
        )
        .annotate(
            quote_bytes=Substr(
                "observation__content",
                F("byte_start") + 1,
                F("byte_end") - F("byte_start"),
                output_field=models.BinaryField(),
            )
        )
        .select_related("web")
        .order_by("pk")
    )
    for evidence in rows.iterator(chunk_size=CHUNK):
        if evidence.kind == EvidenceKind.WEB:
            # A web quote is checked as resolve checks it: the receipt and the quote's hash.
            if not web_source_intact(evidence):
                raise EvidenceMismatch(details={"evidence_id": evidence.pk})
            quote = evidence.web.quote.encode("utf-8")
        else:
            quote = bytes(evidence.quote_bytes)
            if hashlib.sha256(quote).hexdigest() != evidence.quote_sha256:
                # The stream stops without its end line: never a wrong quote.
                raise EvidenceMismatch(details={"evidence_id": evidence.pk})
        body = {
            "id": evidence.pk,
            "fact_id": str(evidence.fact_id),
            "observation_id": str(evidence.observation_id),
            "source": evidence.kind,
            "byte_start": evidence.byte_start,
            "byte_end": evidence.byte_end,
            "quote": quote.decode("utf-8"),
            "extractor_version": evidence.extractor_version,
            # Membership is versioned: a closed row is a source the fact had until then.
            "known_from": iso_utc(evidence.created_at),
            "known_until": iso_utc(evidence.known_until),
        }
        if evidence.authored_by:
            body["authored_by"] = evidence.authored_by
        if evidence.kind == EvidenceKind.WEB:
            for name in MESSAGE_SPAN:
                body.pop(name)
            body.update(web_source_json(evidence.web))
        yield _line("evidence", body)


def _retractions(project: Project, subject: SubjectModel) -> Iterator[bytes]:
    rows = (
        Retraction.objects.for_project(project)
        .filter(fact__subject=subject, fact__erased_at__isnull=True)
        .order_by("retracted_at", "pk")
    )
    for retraction in rows.iterator(chunk_size=CHUNK):
        replacement = str(retraction.replacement_id) if retraction.replacement_id else None
        yield _line(
            "retraction",
            {
                "id": str(retraction.pk),
                "fact_id": str(retraction.fact_id),
                "retracted_by": retraction.retracted_by,
                "retracted_at": iso_utc(retraction.retracted_at),
                "reason": retraction.reason,
                "replacement": replacement,
                "replacement_id": replacement,
            },
        )
