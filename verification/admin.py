"""Read-only admin for verifications and Crossref lookups; failures are one filter away."""

from __future__ import annotations

from django.contrib import admin

from attest.admin import ReadOnlyAdmin
from verification.models import CrossrefAnswer, CrossrefLookup, Verification


class FailedFilter(admin.SimpleListFilter):
    title = "failed"
    parameter_name = "failed"

    def lookups(self, request, model_admin):
        return [("yes", "failed or refused"), ("no", "answered")]

    def queryset(self, request, queryset):
        if self.value() == "yes":
            return queryset.exclude(outcome=Verification.Outcome.ANSWERED)
        if self.value() == "no":
            return queryset.filter(outcome=Verification.Outcome.ANSWERED)
        return queryset


@admin.register(Verification)
class VerificationAdmin(ReadOnlyAdmin):
    list_display = [
        "created_at",
        "route",
        "outcome",
        "error_code",
        "status_code",
        "mode",
        "match",
        "content_kind",
        "host",
        "total_ms",
    ]
    list_filter = [FailedFilter, "outcome", "error_code", "route", "content_kind", "mode", "tier"]
    search_fields = ["request_id", "host", "requested_url", "content_sha256"]
    date_hierarchy = "created_at"
    readonly_fields = [f.name for f in Verification._meta.fields]


@admin.register(CrossrefAnswer)
class CrossrefAnswerAdmin(ReadOnlyAdmin):
    """The day-long cache of Crossref's answers: what every process reads before asking."""

    list_display = ["doi", "status", "retracted", "fetched_at", "expires_at"]
    list_filter = ["status", "retracted"]
    search_fields = ["doi"]
    date_hierarchy = "fetched_at"
    readonly_fields = [f.name for f in CrossrefAnswer._meta.fields]


@admin.register(CrossrefLookup)
class CrossrefLookupAdmin(ReadOnlyAdmin):
    """Every lookup that had to ask Crossref: how it ended, why it was skipped, how long."""

    list_display = [
        "created_at",
        "doi",
        "tier",
        "status",
        "reason",
        "http_status",
        "requests",
        "latency_ms",
    ]
    list_filter = ["status", "reason", "tier"]
    search_fields = ["doi", "request_id"]
    date_hierarchy = "created_at"
    readonly_fields = [f.name for f in CrossrefLookup._meta.fields]
