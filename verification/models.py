"""A record of every verification: what was asked of which page and how it ended, no quote text."""

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

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["outcome", "-created_at"], name="verif_outcome_created")]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(outcome="answered", error_code="")
                | (~models.Q(outcome="answered") & ~models.Q(error_code="")),
                name="verif_error_code_iff_not_answered",
            )
        ]

    def __str__(self) -> str:
        return f"{self.route} {self.outcome} {self.host} ({self.request_id})"
