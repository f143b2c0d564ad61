"""The staff dashboard: calls, charges, refusals and failures per UTC day, with a chart.

Figures come from the records the service already keeps, counted in the database by the
app that keeps them (each app's ``admin.py`` registers its counts with
``attest.registry.register_daily``; this module adds them up per day):

- verification records (``verification.Verification``): one per request that got past the
  checks made before payment, with its outcome and tier;
- refusal tallies (``verification.RefusalTally``): requests refused before payment, counted
  per hour, route and code;
- payment refusals (``billing.Refusal``) and settlements (``billing.Settlement``);
- ledger requests: the audit log (``citations.AuditEvent``), one event per operation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from xml.sax.saxutils import escape

from django.contrib import admin
from django.contrib.auth.decorators import permission_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.utils.safestring import mark_safe

from attest import registry
from billing.money import token_amount

MAX_DAYS = 90
DEFAULT_DAYS = 14


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

    def add(self, column: str, amount) -> None:
        """Add an app's count to a column; "settled" adds {"network|asset": units} per key."""
        if column == "settled":
            for key, units in amount.items():
                self.settled[key] = self.settled.get(key, 0) + units
        elif column in _COUNTED:
            setattr(self, column, getattr(self, column) + amount)
        else:
            raise ValueError(f"the dashboard has no column {column!r}")

    @property
    def money(self) -> str:
        parts = [
            token_amount(amount, network=key.split("|")[0], asset=key.split("|")[1])
            for key, amount in sorted(self.settled.items())
        ]
        return ", ".join(parts) or "—"


_COUNTED = ("calls", "charged", "refusals", "payment_refusals", "failures", "ledger")


def _window(days: int, today: date) -> tuple[datetime, list[date]]:
    first = today - timedelta(days=days - 1)
    start = datetime.combine(first, time.min, tzinfo=timezone.get_current_timezone())
    return start, [first + timedelta(days=i) for i in range(days)]


def daily_figures(*, days: int = DEFAULT_DAYS, today: date | None = None) -> list[Day]:
    """One row per UTC day, oldest first, the last one ``today``: the apps' counts added up."""
    today = today or timezone.now().date()
    start, span = _window(days, today)
    rows = {day: Day(day) for day in span}
    for counts in registry.daily():
        for day, column, amount in counts(start):
            if day in rows:
                rows[day].add(column, amount)
    return [rows[day] for day in span]


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
        for name in _COUNTED:
            totals.add(name, getattr(day, name))
        totals.add("settled", day.settled)
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
