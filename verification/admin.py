"""Read-only admin for verification records, failed batches, refusal tallies and Crossref."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import Count, Q, Sum
from django.db.models.functions import TruncDate
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from attest.admin import ReadOnlyAdmin, milliseconds, wrappable
from attest.registry import register_daily
from billing.models import PaymentClaim
from verification.models import Batch, CrossrefAnswer, CrossrefLookup, RefusalTally, Verification

DURATIONS = {
    "fetch_ms": "fetch",
    "extract_ms": "extract",
    "match_ms": "matching",
    "total_ms": "total",
}
CHARGED = Q(outcome=Verification.Outcome.ANSWERED) & Q(tier__in=["trial", "paid"])


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


class ChargedFilter(admin.SimpleListFilter):
    title = "charged"
    parameter_name = "charged"

    def lookups(self, request, model_admin):
        return [("no", "refused or uncharged"), ("yes", "charged")]

    def queryset(self, request, queryset):
        if self.value() == "no":
            return queryset.exclude(CHARGED)
        if self.value() == "yes":
            return queryset.filter(CHARGED)
        return queryset


class FailedItemsFilter(admin.SimpleListFilter):
    title = "failed quotes"
    parameter_name = "failed_items"

    def lookups(self, request, model_admin):
        return [("any", "any quote failed"), ("none", "no quote failed")]

    def queryset(self, request, queryset):
        if self.value() == "any":
            return queryset.filter(failed_count__gt=0)
        if self.value() == "none":
            return queryset.filter(failed_count=0)
        return queryset


def _table(headers: list[str], rows: list[list]) -> str:
    head = format_html_join("", "<th>{}</th>", ((h,) for h in headers))
    body = format_html_join(
        "",
        "<tr>{}</tr>",
        ((format_html_join("", "<td>{}</td>", ((cell,) for cell in row)),) for row in rows),
    )
    return format_html("<table><thead><tr>{}</tr></thead><tbody>{}</tbody></table>", head, body)


@admin.register(Verification)
class VerificationAdmin(ReadOnlyAdmin):
    # The status code follows from outcome and error code, mode and content kind are
    # filters and on the row's page: the list keeps what finds a row.
    list_display = ["created_at", "route", "outcome", "error", "match", "host", "total"]
    list_filter = [
        FailedFilter,
        ChargedFilter,
        FailedItemsFilter,
        "outcome",
        "error_code",
        "route",
        "content_kind",
        "mode",
        "tier",
    ]
    search_fields = ["request_id", "host", "requested_url", "content_sha256"]
    date_hierarchy = "created_at"
    readonly_fields = [
        *(
            DURATIONS.get(f.name, f.name)
            for f in Verification._meta.fields
            if f.name not in {"items", "pages"}
        ),
        "quote_outcomes",
        "page_verdicts",
        "payment",
    ]
    exclude = ["items", "pages", *DURATIONS]

    @admin.display(description="error code", ordering="error_code")
    def error(self, obj: Verification) -> str:
        return wrappable(obj.error_code)

    @admin.display(description="fetch", ordering="fetch_ms")
    def fetch(self, obj: Verification) -> str:
        return milliseconds(obj.fetch_ms)

    @admin.display(description="extract", ordering="extract_ms")
    def extract(self, obj: Verification) -> str:
        return milliseconds(obj.extract_ms)

    @admin.display(description="match", ordering="match_ms")
    def matching(self, obj: Verification) -> str:
        return milliseconds(obj.match_ms)

    @admin.display(description="total", ordering="total_ms")
    def total(self, obj: Verification) -> str:
        return milliseconds(obj.total_ms)

    @admin.display(description="per-quote outcomes")
    def quote_outcomes(self, obj: Verification) -> str:
        rows = [
            [
                index,
                item.get("page"),
                item.get("match") or "—",
                item.get("score"),
                item["error"] or "",
            ]
            for index, item in enumerate(obj.items)
        ]
        return _table(["#", "page", "match", "score", "error"], rows) if rows else "—"

    @admin.display(description="pages")
    def page_verdicts(self, obj: Verification) -> str:
        rows = [
            [index, p["url"], p.get("http_status"), p["content_kind"], p.get("content_sha256")]
            for index, p in enumerate(obj.pages)
        ]
        return _table(["#", "url", "status", "kind", "content_sha256"], rows) if rows else "—"

    @admin.display(description="payment claim and settlements")
    def payment(self, obj: Verification) -> str:
        """The payment claim made for this request (same request ID) and its settlements."""
        claims = PaymentClaim.objects.filter(request_id=obj.request_id).prefetch_related(
            "settlements"
        )
        links = []
        for claim in claims:
            claim_url = reverse("admin:billing_paymentclaim_change", args=[claim.pk])
            links.append(
                format_html('<a href="{}">claim {} ({})</a>', claim_url, claim.pk, claim.state)
            )
            for settlement in claim.settlements.all():
                url = reverse("admin:billing_settlement_change", args=[settlement.pk])
                links.append(format_html('<a href="{}">settlement {}</a>', url, settlement.pk))
        if not links:
            return "— (a trial, a sample, or refused before payment)"
        return format_html_join(", ", "{}", ((link,) for link in links))


@admin.register(Batch)
class BatchAdmin(VerificationAdmin):
    """Batches only, with how many of their quotes failed."""

    list_display = [
        "created_at",
        "route",
        "outcome",
        "error",
        "item_count",
        "failed_count",
        "host",
        "total",
    ]
    list_filter = [FailedItemsFilter, ChargedFilter, FailedFilter, "route", "error_code", "tier"]

    def get_queryset(self, request):
        return super().get_queryset(request).filter(route__in=Batch.ROUTES)


@admin.register(RefusalTally)
class RefusalTallyAdmin(ReadOnlyAdmin):
    list_display = ["hour", "route", "error_code", "count", "last_at", "last_host"]
    list_filter = ["route", "error_code"]
    search_fields = ["last_request_id", "last_host"]
    date_hierarchy = "hour"


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
        "wrapped_doi",
        "tier",
        "status",
        "reason",
        "http_status",
        "requests",
        "latency",
    ]
    list_filter = ["status", "reason", "tier"]
    search_fields = ["doi", "request_id"]
    date_hierarchy = "created_at"
    readonly_fields = [
        "latency" if f.name == "latency_ms" else f.name for f in CrossrefLookup._meta.fields
    ]
    exclude = ["latency_ms"]

    @admin.display(description="DOI", ordering="doi")
    def wrapped_doi(self, obj: CrossrefLookup) -> str:
        return wrappable(obj.doi)

    @admin.display(description="latency", ordering="latency_ms")
    def latency(self, obj: CrossrefLookup) -> str:
        return milliseconds(obj.latency_ms)


def daily_counts(start):
    """The dashboard's calls, charged calls, refusals and failures per UTC day since start.

    Calls are the recorded requests plus those refused before payment (the tallies).
    """
    records = (
        Verification.objects.filter(created_at__gte=start)
        .annotate(day=TruncDate("created_at"))
        .values("day")
        .annotate(
            calls=Count("id"),
            charged=Count("id", filter=CHARGED),
            refused=Count("id", filter=Q(outcome=Verification.Outcome.REFUSED)),
            failed=Count("id", filter=Q(outcome=Verification.Outcome.FAILED)),
        )
    )
    for row in records:
        yield row["day"], "calls", row["calls"]
        yield row["day"], "charged", row["charged"]
        yield row["day"], "refusals", row["refused"]
        yield row["day"], "failures", row["failed"]
    tallies = (
        RefusalTally.objects.filter(hour__gte=start)
        .annotate(day=TruncDate("hour"))
        .values("day")
        .annotate(total=Sum("count"))
    )
    for row in tallies:
        yield row["day"], "calls", row["total"]
        yield row["day"], "refusals", row["total"]


register_daily(daily_counts)
