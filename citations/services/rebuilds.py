"""Rebuilds: read stored messages again with today's extractor, in a new generation.

A rebuild never edits a fact. The believed version of every fact in its scope closes
its known interval as ``reinterpreted`` (``reinterpreted_by`` names the new generation)
and the messages are replayed through ingestion, so the facts they yield now are admitted
with ``generation`` naming it, even when the statement is unchanged. A source rebuild
covers one message: the facts it supports and, for a one-value predicate, the whole
timeline the message sits in (supersession links must join facts of one reading). A
project rebuild covers every subject, one subject per transaction, on the task queue.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.db.models import F, QuerySet
from django.utils import timezone

from attest.errors import AttestError, NotFound
from citations.extract.extractor import (
    CARDINALITY,
    EXTRACTOR_VERSION,
    Extraction,
    Reading,
    extract,
    read,
)
from citations.models import (
    Evidence,
    EvidenceKind,
    Fact,
    FactVersion,
    Generation,
    Observation,
    Project,
    Role,
    Subject,
)
from citations.services.audit import audit_record
from citations.services.placement import LedgerWrite, SubjectBatch
from citations.services.predicates import predicate_cardinality
from citations.services.tenancy import subject_get_live
from citations.services.timeline import known_now

# (observation ID, byte_start, byte_end): one extracted claim in one message.
Span = tuple[object, int, int]

# What the API calls each kind of rebuild (and the scope a request names).
REBUILD_KINDS = ("source", "project")
KIND_NAMES: dict[str, str] = {
    Generation.Kind.SOURCE_REBUILD: "source",
    Generation.Kind.PROJECT_REBUILD: "project",
}


class RebuildNotFound(NotFound):
    message = "No rebuild with this ID exists in this project."


class RebuildAlreadyRunning(AttestError):
    status_code = 409
    code = "rebuild_running"
    message = "A project rebuild is already running; follow it at GET /v1/rebuilds/{id}."


@dataclass(frozen=True)
class SubjectRebuilt:
    retired: int
    admitted: int


def _believed(project: Project, subject: Subject) -> QuerySet[FactVersion]:
    """Believed versions of the subject's extracted facts.

    Authored records and facts a client recorded (their evidence names ``authored_by``)
    are not readings of the built-in extractor: a rebuild leaves them as they are.
    """
    return (
        FactVersion.objects.for_project(project)
        .filter(subject=subject, known_until__isnull=True, fact__erased_at__isnull=True)
        .exclude(fact__evidence__authored_by__gt="")
    )


def _withdrawn_spans(project: Project, subject: Subject) -> set[Span]:
    """Claims someone retracted: a new reading must not bring them back."""
    # From the subject's retracted versions (few, found by the subject's index), not
    # from the project's evidence: that join read every evidence row of the project
    # for each subject of a project rebuild (4 s a subject on SQLite at 100,000 facts).
    retracted = set(
        FactVersion.objects.for_project(project)
        .filter(subject=subject, retraction__isnull=False)
        .values_list("fact_id", flat=True)
    )
    if not retracted:
        return set()
    rows = (
        Evidence.objects.for_project(project)
        .filter(fact_id__in=retracted)
        .values_list("observation_id", "byte_start", "byte_end")
    )
    return set(rows)


def _retire(project: Project, fact_ids: Iterable, generation: Generation, now: datetime) -> int:
    """Close the believed version of each fact as reinterpreted by ``generation``.

    The one update the append-only trigger allows: ``known_until`` set once, with the
    status and the link that explain it.
    """
    return (
        FactVersion.objects.for_project(project)
        .filter(fact_id__in=list(fact_ids), known_until__isnull=True)
        .update(known_until=now, status="reinterpreted", reinterpreted_by=generation)
    )


def _replay(
    project: Project,
    subject: Subject,
    generation: Generation,
    observations: Iterable[Observation],
    keep: Callable[[Observation, Extraction], bool],
    now: datetime,
) -> None:
    """Run ingestion's rules again over messages in timeline order, in ``generation``.

    The messages are read on the sender's calendar (``sent_at``), as the first ingest
    read them, and their statements are placed and written together.
    """
    withdrawn = _withdrawn_spans(project, subject)
    statements = []
    for observation in observations:
        if observation.role != Role.USER:
            continue
        text = bytes(observation.content).decode("utf-8")
        reading = read(text, occurred_at=observation.sent_at)
        for extraction in (*reading.facts, *_replacements(project, observation, reading)):
            span = (observation.pk, extraction.byte_start, extraction.byte_end)
            if span not in withdrawn and keep(observation, extraction):
                statements.append((observation, extraction))
    batch = SubjectBatch(LedgerWrite(project, subject, generation, now))
    batch.load(statements)
    for observation, extraction in statements:
        batch.apply(observation, extraction)
    batch.flush()


def _replacements(project: Project, observation: Observation, reading: Reading) -> list[Extraction]:
    """The corrections' replacements, as ingest placed them, read again.

    A correction ("I meant pecans, not peanuts") takes its predicate and start from the
    fact it corrected; the replacement fact stored for its clause keeps both, so they are
    read from there. A correction that found nothing to correct gave no fact, nor does it
    now.
    """
    found = []
    for correction in reading.corrections:
        evidence = (
            Evidence.objects.for_project(project)
            .filter(
                observation=observation,
                byte_start=correction.byte_start,
                byte_end=correction.byte_end,
            )
            .select_related("fact")
            .order_by("created_at", "pk")
            .first()
        )
        if evidence is None:
            continue
        first = FactVersion.objects.filter(fact=evidence.fact).order_by("seq").first()
        assert first is not None  # a fact is written with its first version
        predicate = evidence.fact.predicate
        found.append(
            Extraction(
                predicate=predicate,
                cardinality=predicate_cardinality(project=project, name=predicate),
                value=correction.value,
                value_key=correction.value_key,
                statement=correction.statement,
                quote=correction.quote,
                byte_start=correction.byte_start,
                byte_end=correction.byte_end,
                valid_from=first.valid_from,
                valid_precision=first.valid_precision,
            )
        )
    return found


def _timeline_order(observations: QuerySet[Observation]) -> QuerySet[Observation]:
    return observations.order_by("occurred_at", "message_id", "ordinal")


def _admitted(generation: Generation, subject: Subject) -> int:
    return Fact.objects.filter(generation=generation, subject=subject).count()


# --- one source --------------------------------------------------------------


def _source_scope(
    project: Project, subject: Subject, observation: Observation, readings: list[Extraction]
) -> set:
    """Facts the message supports, or would support now, and the timelines they sit in."""
    believed = _believed(project, subject)
    scope = set(
        believed.filter(
            fact__evidence__observation=observation, fact__evidence__known_until__isnull=True
        ).values_list("fact_id", flat=True)
    )
    functional = set(
        believed.filter(fact_id__in=scope, functional=True).values_list("predicate", flat=True)
    )
    functional |= {e.predicate for e in readings if CARDINALITY[e.predicate] == "one"}
    scope |= set(
        believed.filter(predicate__in=functional, functional=True).values_list("fact_id", flat=True)
    )
    for reading in readings:
        if CARDINALITY[reading.predicate] != "one":
            scope |= set(
                believed.filter(
                    predicate=reading.predicate, fact__value_key=reading.value_key
                ).values_list("fact_id", flat=True)
            )
    return scope


@transaction.atomic
def source_rebuild(
    *, project: Project, subject_id: str, message_id: str, actor: str, request_id: str = ""
) -> Generation:
    """Read one stored message again; its facts (and their timelines) get a new generation."""
    subject = subject_get_live(project=project, subject_id=subject_id)
    Subject.objects.select_for_update().filter(pk=subject.pk).first()
    observation = (
        Observation.objects.for_project(project)
        .filter(subject=subject, message_id=message_id, erased_at__isnull=True)
        # An authored record's statement is not a message to read (a client's quote of
        # a message, also carrying authored_by, leaves it one).
        .exclude(evidence__kind=EvidenceKind.AUTHORED)
        .first()
    )
    if observation is None:
        raise NotFound("No message with this ID exists for this subject.")
    now = known_now(project, subject)
    generation = Generation.objects.create(
        project=project,
        kind=Generation.Kind.SOURCE_REBUILD,
        extractor_version=EXTRACTOR_VERSION,
        source_observation=observation,
        requested_by=actor,
        subjects_total=1,
    )
    readings = []
    if observation.role == Role.USER:
        text = bytes(observation.content).decode("utf-8")
        readings = extract(text, occurred_at=observation.sent_at)
    scope = _source_scope(project, subject, observation, readings)
    spans = set(
        Evidence.objects.for_project(project)
        .filter(fact_id__in=scope, known_until__isnull=True)
        .values_list("observation_id", "byte_start", "byte_end")
    )
    retired = _retire(project, scope, generation, now)
    sources = {observation.pk} | {span[0] for span in spans}

    def keep(message: Observation, extraction: Extraction) -> bool:
        if message.pk == observation.pk:
            return True
        return (message.pk, extraction.byte_start, extraction.byte_end) in spans

    _replay(
        project,
        subject,
        generation,
        _timeline_order(Observation.objects.for_project(project).filter(pk__in=sources)),
        keep,
        now,
    )
    _finish(generation, retired=retired, admitted=_admitted(generation, subject), subjects=1)
    audit_record(
        project=project,
        operation="rebuild.source",
        actor=actor,
        object_ids=[str(generation.pk), str(observation.pk)],
        source_count=1,
        request_id=request_id,
    )
    return generation


def _finish(generation: Generation, *, retired: int, admitted: int, subjects: int) -> None:
    generation.state = Generation.State.DONE
    generation.retired = retired
    generation.admitted = admitted
    generation.subjects_done = subjects
    generation.finished_at = timezone.now()
    generation.save(update_fields=["state", "retired", "admitted", "subjects_done", "finished_at"])


# --- the whole project -------------------------------------------------------


def project_rebuild_start(
    *,
    project: Project,
    actor: str,
    enqueue: Callable[[int], str],
    request_id: str = "",
) -> Generation:
    """Admit a project generation and queue its run; the caller follows it by its ID.

    ``enqueue`` queues the run of a generation ID and returns the job's ID: the task
    module's ``project_rebuild_enqueue``, which calls back into this module, so this
    module never imports it.
    """
    with transaction.atomic():
        # One project rebuild at a time: the project row serialises the check.
        Project.objects.select_for_update().filter(pk=project.pk).first()
        running = (
            Generation.objects.for_project(project)
            .filter(kind=Generation.Kind.PROJECT_REBUILD, state=Generation.State.RUNNING)
            .first()
        )
        if running is not None:
            raise RebuildAlreadyRunning(details={"generation": running.pk})
        generation = Generation.objects.create(
            project=project,
            kind=Generation.Kind.PROJECT_REBUILD,
            extractor_version=EXTRACTOR_VERSION,
            state=Generation.State.RUNNING,
            requested_by=actor,
            subjects_total=Subject.objects.for_project(project)
            .filter(erased_at__isnull=True)
            .count(),
        )
        # Queued in the same transaction: the job exists exactly when the generation does.
        generation.task_id = enqueue(generation.pk)
        generation.save(update_fields=["task_id"])
        audit_record(
            project=project,
            operation="rebuild.project.start",
            actor=actor,
            object_ids=[str(generation.pk)],
            request_id=request_id,
        )
    return generation


def subject_rebuild(*, generation: Generation, subject: Subject) -> SubjectRebuilt:
    """Retire every believed extracted fact of one subject and read all its messages again."""
    project = generation.project
    with transaction.atomic():
        Subject.objects.select_for_update().filter(pk=subject.pk).first()
        subject.refresh_from_db(fields=["erased_at"])
        if subject.erased_at is not None:
            return SubjectRebuilt(retired=0, admitted=0)
        now = known_now(project, subject)
        scope = _believed(project, subject).values_list("fact_id", flat=True)
        retired = _retire(project, scope, generation, now)
        _replay(
            project,
            subject,
            generation,
            _timeline_order(
                Observation.objects.for_project(project)
                .filter(subject=subject, erased_at__isnull=True, role=Role.USER)
                # A person's own statement (an authored record) is not a message to read.
                .exclude(evidence__kind=EvidenceKind.AUTHORED)
            ).iterator(chunk_size=500),
            lambda message, extraction: True,
            now,
        )
        return SubjectRebuilt(retired=retired, admitted=_admitted(generation, subject))


def project_rebuild_run(*, generation_id: int) -> dict:
    """The queued job: rebuild subject by subject, counting progress as it goes."""
    generation = Generation.objects.select_related("project").get(pk=generation_id)
    if generation.state != Generation.State.RUNNING:
        return {"state": generation.state}
    project = generation.project
    subject_ids = list(
        Subject.objects.for_project(project)
        .filter(erased_at__isnull=True, created_at__lte=generation.created_at)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    Generation.objects.filter(pk=generation.pk).update(subjects_total=len(subject_ids))
    try:
        for subject_id in subject_ids:
            subject = Subject.objects.get(pk=subject_id)
            done = subject_rebuild(generation=generation, subject=subject)
            Generation.objects.filter(pk=generation.pk).update(
                subjects_done=F("subjects_done") + 1,
                retired=F("retired") + done.retired,
                admitted=F("admitted") + done.admitted,
            )
    except Exception as exc:
        Generation.objects.filter(pk=generation.pk).update(
            state=Generation.State.FAILED,
            failure=type(exc).__name__,
            finished_at=timezone.now(),
        )
        raise
    with transaction.atomic():
        Generation.objects.filter(pk=generation.pk).update(
            state=Generation.State.DONE, finished_at=timezone.now()
        )
        generation.refresh_from_db()
        audit_record(
            project=project,
            operation="rebuild.project.done",
            actor="task:project_rebuild",
            object_ids=[str(generation.pk)],
            source_count=generation.admitted,
        )
    return {"retired": generation.retired, "admitted": generation.admitted}


def rebuild_get(
    *, project: Project, generation_id: int, actor: str, request_id: str = ""
) -> Generation:
    generation = (
        Generation.objects.for_project(project)
        .filter(pk=generation_id, kind__in=list(KIND_NAMES))
        .select_related("source_observation", "source_observation__subject")
        .first()
    )
    if generation is None:
        raise RebuildNotFound()
    audit_record(
        project=project,
        operation="rebuild.get",
        actor=actor,
        object_ids=[str(generation.pk)],
        request_id=request_id,
    )
    return generation
