"""The fact ledger's tables: tenancy, messages, bitemporal fact versions, evidence and audit."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone
from typing import Self, TypeVar

from django.db import models
from django.db.models import Q

from citations.extract.intervals import Interval

# The longest ID a caller names a subject, message or session by, and the longest author
# name it gives: the columns that store them and the API fields that take them read this.
EXTERNAL_ID_MAX_LENGTH = 200
# The characters of a fact's comparison key (Fact.value_key); a longer key is refused.
VALUE_KEY_MAX_LENGTH = 200
# The longest statement a caller writes for a fact (an authored record, a correction), and
# the longest reason it gives for a retraction (the API and the admin's form both take).
STATEMENT_MAX_CHARS = 2000
RETRACTION_REASON_MAX_CHARS = 2000


_Row = TypeVar("_Row", bound=models.Model)


class ProjectScopedQuerySet(models.QuerySet[_Row]):
    """Every ledger read starts here, so no query can forget the tenant."""

    def for_project(self, project: Project) -> Self:
        return self.filter(project=project)


class Project(models.Model):
    name = models.CharField(max_length=100, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    suspended_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return self.name

    @property
    def is_suspended(self) -> bool:
        return self.suspended_at is not None


class Credential(models.Model):
    """A bearer token of one project: only its prefix and SHA-256 are kept."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="credentials")
    prefix = models.CharField(max_length=16, unique=True)
    secret_sha256 = models.CharField(max_length=64)
    label = models.CharField(max_length=100, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = ProjectScopedQuerySet.as_manager()

    def __str__(self) -> str:
        return f"{self.project.name}:{self.prefix}"


# A predicate's name: a built-in's or one a project declared (see DeclaredPredicate).
PREDICATE_MAX_LENGTH = 64


class DeclaredPredicate(models.Model):
    """A predicate a project declared for its own facts, beside the built-in ones.

    ``cardinality`` decides supersession as for the built-ins: ``one`` stores its facts
    as functional (the exclusion constraint of migration 0002 and the partial unique
    index ``factversion_one_open_functional`` hold for them too), ``many`` accumulates.
    """

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="predicates")
    name = models.CharField(max_length=PREDICATE_MAX_LENGTH)
    cardinality = models.CharField(max_length=4, choices=[("one", "one"), ("many", "many")])
    description = models.TextField(blank=True)
    # Words a question may use for it, one a line: indexed with each of its facts for
    # ranked recall (see citations.vocabulary).
    synonyms = models.TextField(blank=True, default="")
    declared_by = models.CharField(max_length=EXTERNAL_ID_MAX_LENGTH)
    created_at = models.DateTimeField()

    objects = ProjectScopedQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="predicate_unique_name"),
            models.CheckConstraint(
                condition=Q(cardinality__in=["one", "many"]), name="predicate_cardinality"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.cardinality})"


class Subject(models.Model):
    """Whom facts are about, named by the client's own identifier."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="subjects")
    external_id = models.CharField(max_length=EXTERNAL_ID_MAX_LENGTH)
    created_at = models.DateTimeField(auto_now_add=True)
    erased_at = models.DateTimeField(null=True, blank=True)

    objects = ProjectScopedQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "external_id"], name="subject_unique_id"),
        ]

    def __str__(self) -> str:
        return self.external_id


class Role(models.TextChoices):
    USER = "user"
    ASSISTANT = "assistant"
    SYSTEM = "system"
    TOOL = "tool"


class Observation(models.Model):
    """One message exactly as received: its UTF-8 bytes are the ground truth for evidence."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="observations")
    subject = models.ForeignKey(Subject, on_delete=models.CASCADE, related_name="observations")
    message_id = models.CharField(max_length=EXTERNAL_ID_MAX_LENGTH)
    role = models.CharField(max_length=16, choices=Role.choices)
    occurred_at = models.DateTimeField()
    # The sender's UTC offset of ``occurred_at``, in seconds: the database keeps only the
    # instant, and relative dates ("yesterday") are read on the sender's calendar.
    # Null for messages stored before it was kept (read in UTC).
    occurred_offset = models.IntegerField(null=True, blank=True)
    received_at = models.DateTimeField()
    content = models.BinaryField()
    content_sha256 = models.CharField(max_length=64)
    session = models.CharField(max_length=EXTERNAL_ID_MAX_LENGTH, blank=True)
    ordinal = models.PositiveIntegerField(default=0)
    erased_at = models.DateTimeField(null=True, blank=True)

    objects = ProjectScopedQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "message_id"], name="observation_unique_id"),
            models.CheckConstraint(condition=Q(role__in=Role.values), name="observation_role"),
        ]
        indexes = [models.Index(fields=["subject", "occurred_at"])]

    def __str__(self) -> str:
        return self.message_id

    @property
    def sent_at(self) -> datetime:
        """``occurred_at`` at the offset the sender gave: what the extractor reads it at."""
        if self.occurred_offset is None:
            return self.occurred_at
        return self.occurred_at.astimezone(timezone(timedelta(seconds=self.occurred_offset)))


class Generation(models.Model):
    """A run of the extractor that admits facts: the first ingest, or a later rebuild."""

    class Kind(models.TextChoices):
        INGEST = "ingest"
        SOURCE_REBUILD = "source_rebuild"
        PROJECT_REBUILD = "project_rebuild"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="generations")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    extractor_version = models.CharField(max_length=64)

    class State(models.TextChoices):
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    source_observation = models.ForeignKey(
        Observation, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # A rebuild's run: a project rebuild works subject by subject on the task queue.
    state = models.CharField(max_length=10, choices=State.choices, default=State.DONE)
    requested_by = models.CharField(max_length=200, blank=True)
    task_id = models.CharField(max_length=64, blank=True)
    subjects_total = models.PositiveIntegerField(default=0)
    subjects_done = models.PositiveIntegerField(default=0)
    retired = models.PositiveIntegerField(default=0)
    admitted = models.PositiveIntegerField(default=0)
    finished_at = models.DateTimeField(null=True, blank=True)
    # The exception's class only: a message could quote the text being rebuilt.
    failure = models.CharField(max_length=200, blank=True)

    objects = ProjectScopedQuerySet.as_manager()

    class Meta:
        constraints = [
            # One baseline generation per extractor version; rebuilds add more.
            models.UniqueConstraint(
                fields=["project", "extractor_version"],
                condition=Q(kind="ingest"),
                name="generation_one_ingest_per_version",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.pk} ({self.extractor_version})"

    @property
    def live_source(self) -> Observation | None:
        """The message a source rebuild read, unless it has been erased since."""
        source = self.source_observation
        return source if source is not None and source.erased_at is None else None


class Fact(models.Model):
    """The identity and claim of a fact; its intervals live in versions (FactVersion)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="facts")
    subject = models.ForeignKey(Subject, on_delete=models.CASCADE, related_name="facts")
    predicate = models.CharField(max_length=PREDICATE_MAX_LENGTH)
    functional = models.BooleanField()
    value = models.TextField()
    value_key = models.CharField(max_length=VALUE_KEY_MAX_LENGTH)
    statement = models.TextField()
    source_role = models.CharField(max_length=16)
    generation = models.ForeignKey(Generation, on_delete=models.PROTECT, related_name="facts")
    created_at = models.DateTimeField()
    erased_at = models.DateTimeField(null=True, blank=True)

    objects = ProjectScopedQuerySet.as_manager()

    class Meta:
        indexes = [
            models.Index(fields=["subject", "predicate", "value_key"]),
            # The admin lists facts newest first.
            models.Index(fields=["-created_at", "-id"], name="fact_newest_first"),
        ]

    def __str__(self) -> str:
        return f"{self.predicate}: {self.value}"


class FactSearch(models.Model):
    """The text ranked recall searches for one believable fact: written by the database.

    Triggers on the fact table (migration 0012) keep it in step inside the transaction
    that writes the fact: ``content`` is the statement and value, ``vocabulary`` the
    predicate's name, description and synonyms. An erased fact's row is deleted. On
    PostgreSQL a generated ``tsvector`` column and a GIN index on (subject, vector)
    serve the search; on SQLite an FTS5 table (porter stemming) mirrors the two columns.
    """

    id = models.BigAutoField(primary_key=True)
    fact = models.OneToOneField(Fact, on_delete=models.CASCADE, related_name="+")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    # No B-tree of its own: on PostgreSQL the GIN index on (subject, vector) serves a
    # subject's lookups, so a ranked recall reads one index for the subject and the words.
    subject = models.ForeignKey(Subject, on_delete=models.CASCADE, related_name="+", db_index=False)
    content = models.TextField()
    vocabulary = models.TextField()

    def __str__(self) -> str:
        return f"search text of {self.fact_id}"


class ChangeType(models.TextChoices):
    CREATED = "created"
    SUPERSEDED = "superseded"
    RETRACTED = "retracted"
    REINTERPRETED = "reinterpreted"
    ERASED = "erased"


class FactChange(models.Model):
    """One event of the change feed: a fact was created, superseded, retracted, reinterpreted
    or erased. Written by database triggers (migration 0012) in the writing transaction.

    ``seq`` counts a project's changes in commit order: it is taken under the project
    row's lock (the audit chain's lock), held until the transaction ends, so a change
    with a lower ``seq`` is always committed before one with a higher. No content: the
    statement and value stay with the fact, and go when it is erased.
    """

    id = models.BigAutoField(primary_key=True)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    seq = models.BigIntegerField()
    type = models.CharField(max_length=16, choices=ChangeType.choices)
    fact = models.ForeignKey(Fact, on_delete=models.CASCADE, related_name="changes")
    # The fact's subject, so one subject's feed reads an index of its own.
    subject = models.ForeignKey(Subject, on_delete=models.CASCADE, related_name="+")
    at = models.DateTimeField()

    objects = ProjectScopedQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "seq"], name="factchange_unique_seq"),
            models.CheckConstraint(condition=Q(type__in=ChangeType.values), name="factchange_type"),
        ]
        indexes = [models.Index(fields=["subject", "seq"])]

    def __str__(self) -> str:
        return f"{self.type} {self.fact_id} #{self.seq}"


class Retraction(models.Model):
    """Someone withdrew a fact; a correction names the fact that replaces it."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="retractions")
    fact = models.ForeignKey(Fact, on_delete=models.CASCADE, related_name="retractions")
    retracted_by = models.CharField(max_length=200)
    retracted_at = models.DateTimeField()
    reason = models.TextField(blank=True)
    replacement = models.ForeignKey(
        Fact, null=True, blank=True, on_delete=models.SET_NULL, related_name="replaces"
    )

    objects = ProjectScopedQuerySet.as_manager()

    def __str__(self) -> str:
        return f"retraction of {self.fact_id}"


class FactVersion(models.Model):
    """What the ledger believed about a fact over one known-time interval.

    Known time only grows: a change of belief closes the open version (sets
    ``known_until`` once) and writes the next one. Status is derived from the
    intervals and links, and the check constraints below keep it so.
    """

    fact = models.ForeignKey(Fact, on_delete=models.CASCADE, related_name="versions")
    seq = models.PositiveIntegerField()
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    subject = models.ForeignKey(Subject, on_delete=models.CASCADE, related_name="+")
    predicate = models.CharField(max_length=PREDICATE_MAX_LENGTH)
    functional = models.BooleanField()
    valid_from = models.DateTimeField()
    valid_until = models.DateTimeField(null=True, blank=True)
    valid_from_inclusive = models.BooleanField(default=True)
    valid_until_inclusive = models.BooleanField(default=False)
    valid_precision = models.CharField(max_length=10, default="instant")
    known_from = models.DateTimeField()
    known_until = models.DateTimeField(null=True, blank=True)
    known_from_inclusive = models.BooleanField(default=True)
    known_until_inclusive = models.BooleanField(default=False)
    status = models.CharField(max_length=20)
    superseded_by = models.ForeignKey(
        Fact, null=True, blank=True, on_delete=models.SET_NULL, related_name="supersedes"
    )
    supersession_source_observation = models.ForeignKey(
        Observation, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    retraction = models.ForeignKey(
        Retraction, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    reinterpreted_by = models.ForeignKey(
        Generation, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )

    objects = ProjectScopedQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["fact", "seq"], name="factversion_unique_seq"),
            models.UniqueConstraint(
                fields=["fact"],
                condition=Q(known_until__isnull=True),
                name="factversion_one_believed",
            ),
            # SQLite's guard (PostgreSQL adds an exclusion constraint, migration 0002):
            # one believed, open-ended value of a functional predicate per subject.
            models.UniqueConstraint(
                fields=["subject", "predicate"],
                condition=Q(functional=True, known_until__isnull=True, valid_until__isnull=True),
                name="factversion_one_open_functional",
            ),
            models.CheckConstraint(
                condition=Q(valid_until__isnull=True) | Q(valid_until__gte=models.F("valid_from")),
                name="factversion_valid_order",
            ),
            models.CheckConstraint(
                condition=Q(known_until__isnull=True) | Q(known_until__gte=models.F("known_from")),
                name="factversion_known_order",
            ),
            models.CheckConstraint(
                condition=Q(superseded_by__isnull=True) | Q(valid_until__isnull=False),
                name="factversion_superseded_closes_validity",
            ),
            models.CheckConstraint(
                condition=Q(
                    superseded_by__isnull=True, supersession_source_observation__isnull=True
                )
                | Q(superseded_by__isnull=False, supersession_source_observation__isnull=False),
                name="factversion_supersession_links_together",
            ),
            models.CheckConstraint(
                condition=(
                    Q(
                        status="current",
                        known_until__isnull=True,
                        valid_until__isnull=True,
                        retraction__isnull=True,
                        reinterpreted_by__isnull=True,
                    )
                    | Q(
                        status="validity_closed",
                        known_until__isnull=True,
                        valid_until__isnull=False,
                        retraction__isnull=True,
                        reinterpreted_by__isnull=True,
                    )
                    | Q(
                        status="knowledge_closed",
                        known_until__isnull=False,
                        retraction__isnull=True,
                        reinterpreted_by__isnull=True,
                    )
                    | Q(status="retracted", known_until__isnull=False, retraction__isnull=False)
                    | Q(
                        status="reinterpreted",
                        known_until__isnull=False,
                        retraction__isnull=True,
                        reinterpreted_by__isnull=False,
                    )
                ),
                name="factversion_status_matches_intervals",
            ),
        ]
        indexes = [
            models.Index(fields=["subject", "predicate", "known_from"]),
            models.Index(fields=["superseded_by"]),
        ]

    def __str__(self) -> str:
        return f"{self.fact_id} v{self.seq}"

    @property
    def valid_interval(self) -> Interval:
        return Interval(
            self.valid_from, self.valid_until, self.valid_from_inclusive, self.valid_until_inclusive
        )

    @property
    def known_interval(self) -> Interval:
        return Interval(
            self.known_from, self.known_until, self.known_from_inclusive, self.known_until_inclusive
        )


class EvidenceKind(models.TextChoices):
    MESSAGE = "message"  # a byte range of a message the extractor read
    AUTHORED = "authored"  # an authored record's own statement
    WEB = "web"  # a quote on a web page, vouched for by an Attest receipt (WebSource)


class Evidence(models.Model):
    """Where a fact came from: a byte range of one stored message, or a verified web quote.

    A ``web`` row hangs off the authored record that brought it in: its observation and
    byte range are that record's statement (so it sorts, moves and is erased with it),
    its ``quote_sha256`` is the web quote's, and ``web`` holds the page and the receipt.

    Membership is versioned in known time like fact versions: a row says the message
    supported the fact from ``created_at`` until ``known_until`` (open: still believed).
    Moving a source to another fact closes this row and writes a new one, so an as-of
    query still sees which sources a fact had before (migration 0005 keeps it so).
    """

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    fact = models.ForeignKey(Fact, on_delete=models.CASCADE, related_name="evidence")
    observation = models.ForeignKey(Observation, on_delete=models.CASCADE, related_name="evidence")
    kind = models.CharField(
        max_length=10, choices=EvidenceKind.choices, default=EvidenceKind.MESSAGE
    )
    byte_start = models.PositiveIntegerField()
    byte_end = models.PositiveIntegerField()
    # Hash of the quoted bytes when they were extracted: resolve re-reads and compares.
    quote_sha256 = models.CharField(max_length=64)
    extractor_version = models.CharField(max_length=64)
    authored_by = models.CharField(max_length=EXTERNAL_ID_MAX_LENGTH, blank=True)
    # When this source says the fact began: a late message between two restatements
    # of one value splits the fact at the sources, so arrival order never matters.
    asserted_from = models.DateTimeField(null=True, blank=True)
    asserted_precision = models.CharField(max_length=10, blank=True)
    created_at = models.DateTimeField()
    known_until = models.DateTimeField(null=True, blank=True)

    objects = ProjectScopedQuerySet.as_manager()

    class Meta:
        verbose_name_plural = "evidence"
        constraints = [
            # Web rows share their record's span: one record may bring several quotes.
            models.UniqueConstraint(
                fields=["fact", "observation", "byte_start", "byte_end"],
                condition=Q(known_until__isnull=True) & ~Q(kind="web"),
                name="evidence_unique_believed_span",
            ),
            models.CheckConstraint(condition=Q(kind__in=EvidenceKind.values), name="evidence_kind"),
            models.CheckConstraint(
                condition=Q(known_until__isnull=True) | Q(known_until__gte=models.F("created_at")),
                name="evidence_known_order",
            ),
            models.CheckConstraint(
                condition=Q(byte_end__gt=models.F("byte_start")), name="evidence_span_order"
            ),
        ]
        indexes = [models.Index(fields=["fact", "id"])]

    def __str__(self) -> str:
        return f"{self.fact_id} [{self.byte_start}:{self.byte_end}]"


class WebSource(models.Model):
    """The page behind a ``web`` evidence row: what its receipt signed, and the receipt.

    Written once with its row and never changed; resolve checks the receipt's signature
    and the quote's hash against it on every request. Erasure deletes it with its row.
    """

    evidence = models.OneToOneField(
        Evidence, primary_key=True, on_delete=models.CASCADE, related_name="web"
    )
    quote = models.TextField()
    receipt = models.TextField()
    # Which result of the receipt (a batch's citation or quote) vouches for the quote.
    receipt_index = models.PositiveIntegerField(default=0)
    # The receipt's leaf in the transparency log (null: signed before the log began).
    receipt_log_index = models.BigIntegerField(null=True, blank=True)
    route = models.CharField(max_length=40)
    url = models.TextField()
    final_url = models.TextField(blank=True)
    content_sha256 = models.CharField(max_length=64)
    normalised_sha256 = models.CharField(max_length=64)
    match = models.CharField(max_length=10)
    # Code points of the quote in the page's normalised text, as signed.
    start = models.PositiveIntegerField()
    end = models.PositiveIntegerField()
    pdf_page = models.PositiveIntegerField(null=True, blank=True)
    pdf_page_end = models.PositiveIntegerField(null=True, blank=True)
    retrieved_at = models.DateTimeField()  # when the receipt was issued
    doi = models.CharField(max_length=300, blank=True)
    doi_status = models.CharField(max_length=16, blank=True)
    retracted = models.BooleanField(null=True, blank=True)  # as signed

    def __str__(self) -> str:
        return f"{self.url} [{self.start}:{self.end}]"


class AuditEvent(models.Model):
    """Who did what to which IDs, and how many sources: never content.

    Rows are chained per project (``hash`` covers the previous row's hash), so a
    removed or altered row shows. Append-only: the model refuses updates and deletes.
    """

    project = models.ForeignKey(Project, on_delete=models.PROTECT, related_name="+")
    seq = models.PositiveIntegerField()
    operation = models.CharField(max_length=60)
    actor = models.CharField(max_length=200)
    object_ids = models.JSONField(default=list)
    source_count = models.PositiveIntegerField(default=0)
    request_id = models.CharField(max_length=128, blank=True)
    # "ok", or the error code the operation was refused with (a 404 probe, a 500).
    # Null on events written before outcomes were kept; nullable so that adding it
    # did not rebuild the table (SQLite would have dropped the append-only triggers).
    outcome = models.CharField(max_length=40, null=True, blank=True)  # noqa: DJ001
    created_at = models.DateTimeField()
    prev_hash = models.CharField(max_length=64)
    hash = models.CharField(max_length=64, unique=True)

    objects = ProjectScopedQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "seq"], name="auditevent_unique_seq"),
        ]

    def __str__(self) -> str:
        return f"{self.operation} #{self.seq}"

    def save(self, *args, **kwargs):
        if not self._state.adding:
            raise ValueError("audit events are append-only")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise ValueError("audit events are append-only")
