"""Records of verification calls (no quote text), refusal tallies and shared limit state."""

from __future__ import annotations

from django.db import models


class Verification(models.Model):
    class Outcome(models.TextChoices):
        ANSWERED = "answered", "answered"
        REFUSED = "refused", "refused"  # an error with a code: blocked, host_not_found, ...
        FAILED = "failed", "failed"  # an unexpected server error

    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    route = models.CharField(max_length=40)
    request_id = models.CharField(max_length=128, db_index=True)
    # The answered call's receipt's leaf in the transparency log, written in the same
    # transaction as the leaf (null for a call that was not answered).
    receipt_log_index = models.BigIntegerField(null=True, blank=True)
    tier = models.CharField(max_length=16, blank=True)
    outcome = models.CharField(max_length=16, choices=Outcome.choices)
    status_code = models.PositiveSmallIntegerField()
    error_code = models.CharField(max_length=64, blank=True)
    mode = models.CharField(max_length=16)
    match = models.CharField(max_length=16, blank=True)
    host = models.CharField(max_length=255, blank=True)
    requested_url = models.TextField()
    final_url = models.TextField(blank=True)
    http_status = models.PositiveSmallIntegerField(null=True, blank=True)
    content_kind = models.CharField(max_length=16, blank=True)
    content_sha256 = models.CharField(max_length=64, blank=True)
    normalised_sha256 = models.CharField(max_length=64, blank=True)
    pdf_pages_read = models.PositiveIntegerField(null=True, blank=True)
    fetch_ms = models.FloatField(null=True, blank=True)
    extract_ms = models.FloatField(null=True, blank=True)
    match_ms = models.FloatField(null=True, blank=True)
    total_ms = models.FloatField()
    # Batches (verify/citations, verify/quotes): how many quotes, how many carry an error,
    # each one's outcome ({"page", "match", "error"}) and each distinct page's verdict.
    item_count = models.PositiveSmallIntegerField(default=1)
    failed_count = models.PositiveSmallIntegerField(default=0)
    items = models.JSONField(default=list, blank=True)
    pages = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["outcome", "-created_at"], name="verif_outcome_created"),
            models.Index(fields=["route", "-created_at"], name="verif_route_created"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(failed_count__lte=models.F("item_count")),
                name="verif_failed_within_items",
            ),
            models.CheckConstraint(
                condition=models.Q(outcome="answered", error_code="")
                | (~models.Q(outcome="answered") & ~models.Q(error_code="")),
                name="verif_error_code_iff_not_answered",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.route} {self.outcome} {self.host} ({self.request_id})"


class RefusalTally(models.Model):
    """Requests refused before payment, counted per hour, route and code: one small row each.

    A refusal costs the caller nothing, so it must not cost a row per request either.
    """

    hour = models.DateTimeField()
    route = models.CharField(max_length=40)
    error_code = models.CharField(max_length=64)
    count = models.PositiveIntegerField(default=0)
    last_at = models.DateTimeField()
    last_request_id = models.CharField(max_length=128, blank=True)
    last_host = models.CharField(max_length=255, blank=True)

    class Meta:
        verbose_name_plural = "refusal tallies"
        ordering = ["-hour", "route", "error_code"]
        constraints = [
            models.UniqueConstraint(
                fields=["hour", "route", "error_code"], name="verif_one_tally_per_hour_code"
            )
        ]

    def __str__(self) -> str:
        return f"{self.route} {self.error_code} x{self.count} ({self.hour:%Y-%m-%d %H:00})"


class Batch(Verification):
    """The admin's view of the batch routes' records, with their per-quote outcomes."""

    ROUTES = ("verify/citations", "verify/quotes", "sample/citations")

    class Meta:
        proxy = True
        verbose_name_plural = "batches"


# --- Crossref ---------------------------------------------------------------------------


class CrossrefAnswer(models.Model):
    """Crossref's answer about one DOI, kept a day: the cache every server process shares.

    Only answers are kept (``found`` with the work, ``not_found``); a skipped lookup is
    asked again next time.
    """

    class Status(models.TextChoices):
        FOUND = "found", "found"
        NOT_FOUND = "not_found", "not found"

    doi = models.CharField(max_length=300, unique=True)
    status = models.CharField(max_length=16, choices=Status.choices)
    work = models.JSONField(null=True, blank=True)  # the crossref block, when found
    retracted = models.BooleanField(null=True, blank=True)  # for staff to filter on
    fetched_at = models.DateTimeField()
    expires_at = models.DateTimeField(db_index=True)

    class Meta:
        ordering = ["-fetched_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(status="found", work__isnull=False, retracted__isnull=False)
                | models.Q(status="not_found", work__isnull=True, retracted__isnull=True),
                name="crossref_answer_work_iff_found",
            ),
            models.CheckConstraint(
                condition=models.Q(expires_at__gt=models.F("fetched_at")),
                name="crossref_answer_expires_after_fetch",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.doi} {self.status}"


class CrossrefLookup(models.Model):
    """One time a DOI had to be asked of Crossref (a cached answer is no lookup)."""

    class Status(models.TextChoices):
        FOUND = "found", "found"
        NOT_FOUND = "not_found", "not found"
        SKIPPED = "skipped", "skipped"

    class Reason(models.TextChoices):
        RATE_LIMITED = "rate_limited", "rate limited"
        BUSY = "busy", "busy"
        TIMEOUT = "timeout", "timeout"
        UNAVAILABLE = "unavailable", "unavailable"

    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    request_id = models.CharField(max_length=128, blank=True, db_index=True)
    doi = models.CharField(max_length=300, db_index=True)
    tier = models.CharField(max_length=16)
    status = models.CharField(max_length=16, choices=Status.choices)
    reason = models.CharField(max_length=16, choices=Reason.choices, blank=True)
    http_status = models.PositiveSmallIntegerField(null=True, blank=True)  # Crossref's last
    requests = models.PositiveSmallIntegerField(default=0)  # requests sent to Crossref
    latency_ms = models.FloatField()  # waiting for our turn included

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["status", "-created_at"], name="crossref_lookup_status")]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(status="skipped") & ~models.Q(reason="")
                | ~models.Q(status="skipped") & models.Q(reason=""),
                name="crossref_lookup_reason_iff_skipped",
            )
        ]

    def __str__(self) -> str:
        return f"{self.doi} {self.status} {self.reason}".rstrip()


class CrossrefPace(models.Model):
    """The one-at-a-time lease and the pacing state, where the cache is not shared.

    With Redis as the cache both live there; with the embedded local-memory cache
    (one per process) this row is what every process agrees on.
    """

    name = models.CharField(max_length=32, primary_key=True)
    holder = models.CharField(max_length=64, blank=True)
    lease_until = models.FloatField(default=0.0)  # seconds since the epoch
    state = models.JSONField(default=dict)

    def __str__(self) -> str:
        return self.name
