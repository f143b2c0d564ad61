"""The staff dashboard: calls, charges, refusals and failures per UTC day, with a chart.

Figures come from the records the service already keeps, counted in the database:

- verification records (``verification.Verification``): one per request that got past the
  checks made before payment, with its outcome and tier;
- refusal tallies (``verification.RefusalTally``): requests refused before payment, counted
  per hour, route and code;
- payment refusals (``billing.Refusal``) and settlements (``billing.Settlement``);
- ledger requests: the audit log (``citations.AuditEvent``), one event per operation.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from xml.sax.saxutils import escape

from django.contrib import admin
from django.contrib.auth.decorators import permission_required
from django.db.models import BigIntegerField, Count, Q, Sum
from django.db.models.functions import Cast, TruncDate
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.utils.safestring import mark_safe

from billing.models import Refusal, Settlement
from billing.money import token_amount
from citations.models import AuditEvent
from verification.models import RefusalTally, Verification

MAX_DAYS = 90
DEFAULT_DAYS = 14
CHARGED = Q(outcome=Verification.Outcome.ANSWERED) & Q(tier__in=["trial", "paid"])


@dataclass
class Day:
    day: date
    calls: int = 0  # verification requests: recorded ones plus those refused before payment
    charged: int = 0  # answers charged (a trial call or a paid one)
    refusals: int = 0  # refused with an error code, before or after payment
    payment_refusals: int = 0  # payments refused before any work
    failures: int = 0  # unexpected server errors
    ledger: int = 0  # ledger operations (audit events)
    settled: dict[str, int] = field(default_factory=dict)  # (network|asset) -> atomic units

    @property
    def money(self) -> str:
        parts = [
            token_amount(amount, network=key.split("|")[0], asset=key.split("|")[1])
            for key, amount in sorted(self.settled.items())
        ]
        return ", ".join(parts) or "—"


def _window(days: int, today: date) -> tuple[datetime, list[date]]:
    first = today - timedelta(days=days - 1)
    start = datetime.combine(first, time.min, tzinfo=timezone.get_current_timezone())
    return start, [first + timedelta(days=i) for i in range(days)]


def daily_figures(*, days: int = DEFAULT_DAYS, today: date | None = None) -> list[Day]:
    """One row per UTC day, oldest first, the last one ``today``."""
    today = today or timezone.now().date()
    start, span = _window(days, today)
    rows = {day: Day(day) for day in span}

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
        if row["day"] in rows:
            day = rows[row["day"]]
            day.calls += row["calls"]
            day.charged += row["charged"]
            day.refusals += row["refused"]
            day.failures += row["failed"]

    tallies = (
        RefusalTally.objects.filter(hour__gte=start)
        .annotate(day=TruncDate("hour"))
        .values("day")
        .annotate(total=Sum("count"))
    )
    for row in tallies:
        if row["day"] in rows:
            rows[row["day"]].calls += row["total"]
            rows[row["day"]].refusals += row["total"]

    for row in _per_day(Refusal.objects.filter(minute__gte=start), "minute", Sum("count")):
        if row["day"] in rows:
            rows[row["day"]].payment_refusals += row["total"]

    for row in _per_day(
        AuditEvent.objects.filter(created_at__gte=start), "created_at", Count("id")
    ):
        if row["day"] in rows:
            rows[row["day"]].ledger += row["total"]

    settled = (
        Settlement.objects.filter(created_at__gte=start, success=True)
        .annotate(day=TruncDate("created_at"))
        .values("day", "network", "claim__asset")
        .annotate(total=Sum(Cast("amount", BigIntegerField())))
    )
    sums: dict[date, dict[str, int]] = defaultdict(dict)
    for row in settled:
        key = f"{row['network']}|{row['claim__asset']}"
        sums[row["day"]][key] = sums[row["day"]].get(key, 0) + row["total"]
    for day, amounts in sums.items():
        if day in rows:
            rows[day].settled = amounts
    return [rows[day] for day in span]


def _per_day(queryset, column: str, total):
    return queryset.annotate(day=TruncDate(column)).values("day").annotate(total=total)


# --- the chart -----------------------------------------------------------------------------

SERIES = (
    ("calls", "calls", "#90a4ae"),
    ("charged", "charged", "#2e7d32"),
    ("refusals", "refusals", "#ef6c00"),
    ("failures", "failures", "#c62828"),
)
CHART_WIDTH, CHART_HEIGHT = 900, 220
CHART_LEFT, CHART_BOTTOM, CHART_TOP = 48, 36, 28


def chart_svg(days: list[Day]) -> str:
    """Grouped bars, one group a day, one bar a series; a scale on the left."""
    highest = max([1, *(getattr(d, name) for d in days for name, _, _ in SERIES)])
    peak = -(-highest // 4) * 4  # a multiple of 4: the scale's five lines are whole numbers
    plot_h = CHART_HEIGHT - CHART_BOTTOM - CHART_TOP
    plot_w = CHART_WIDTH - CHART_LEFT - 10
    group = plot_w / max(len(days), 1)
    bar = max(min(group / (len(SERIES) + 1), 18), 1.5)
    base = CHART_TOP + plot_h
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{CHART_WIDTH}" height="{CHART_HEIGHT}" '
        f'viewBox="0 0 {CHART_WIDTH} {CHART_HEIGHT}" role="img" class="dashboard-chart" '
        'aria-label="Calls, charged calls, refusals and failures per day" '
        'font-family="system-ui, sans-serif" font-size="11">'
    ]
    at = CHART_LEFT
    for _, label, colour in SERIES:
        out.append(
            f'<rect x="{at}" y="8" width="10" height="10" fill="{colour}"/>'
            f'<text x="{at + 14}" y="17">{escape(label)}</text>'
        )
        at += 24 + 7 * len(label)
    for step in range(5):
        value = peak * step / 4
        y = base - plot_h * step / 4
        out.append(
            f'<line x1="{CHART_LEFT}" y1="{y:.1f}" x2="{CHART_LEFT + plot_w}" y2="{y:.1f}" '
            f'stroke="#e0e0e0"/><text x="{CHART_LEFT - 6}" y="{y + 4:.1f}" text-anchor="end" '
            f'fill="#666">{value:,.0f}</text>'
        )
    label_every = max(1, len(days) // 10)
    for index, day in enumerate(days):
        left = CHART_LEFT + index * group + (group - bar * len(SERIES)) / 2
        out.append(f'<g class="day" data-day="{day.day.isoformat()}">')
        for offset, (name, label, colour) in enumerate(SERIES):
            value = getattr(day, name)
            height = plot_h * value / peak
            out.append(
                f'<rect x="{left + offset * bar:.1f}" y="{base - height:.1f}" width="{bar:.1f}" '
                f'height="{height:.1f}" fill="{colour}" data-series="{name}" '
                f'data-value="{value}"><title>{escape(f"{day.day}: {value} {label}")}</title>'
                "</rect>"
            )
        out.append("</g>")
        if index % label_every == 0:
            out.append(
                f'<text x="{CHART_LEFT + (index + 0.5) * group:.1f}" y="{base + 16}" '
                f'text-anchor="middle" fill="#666">{day.day.strftime("%m-%d")}</text>'
            )
    out.append(
        f'<line x1="{CHART_LEFT}" y1="{base}" x2="{CHART_LEFT + plot_w}" y2="{base}" '
        'stroke="#999"/></svg>'
    )
    return "".join(out)


# --- the page ------------------------------------------------------------------------------


def _days(request: HttpRequest) -> int:
    try:
        days = int(request.GET.get("days", DEFAULT_DAYS))
    except ValueError:
        return DEFAULT_DAYS
    return min(max(days, 1), MAX_DAYS)


@permission_required(
    ["verification.view_verification", "billing.view_settlement"], raise_exception=True
)
def dashboard(request: HttpRequest) -> HttpResponse:
    """Read-only: it answers GET and HEAD only (the admin wraps it for staff)."""
    if request.method not in ("GET", "HEAD"):
        return HttpResponse(status=405, headers={"Allow": "GET, HEAD"})
    days = daily_figures(days=_days(request))
    totals = Day(days[-1].day)
    for day in days:
        for name in ("calls", "charged", "refusals", "payment_refusals", "failures", "ledger"):
            setattr(totals, name, getattr(totals, name) + getattr(day, name))
        for key, amount in day.settled.items():
            totals.settled[key] = totals.settled.get(key, 0) + amount
    context = {
        **admin.site.each_context(request),
        "title": "Dashboard",
        "days": list(reversed(days)),
        "totals": totals,
        "span": len(days),
        "choices": [7, 14, 30, 90],
        "chart": mark_safe(chart_svg(days)),
    }
    return render(request, "admin/dashboard.html", context)
