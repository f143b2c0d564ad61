"""Read-only admin for the verification record; failures are one filter away."""

from __future__ import annotations

from django.contrib import admin

from attest.admin import ReadOnlyAdmin
from verification.models import Verification


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
