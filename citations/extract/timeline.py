"""Bitemporal pictures of facts as SVG: valid time across, known time up.

Each fact version is a rectangle spanning its valid interval (x) and its known interval (y).
Valid time is to scale; known time goes up in steps, one per moment the ledger's belief
changed (``known_levels``). An open end reaches the picture's "now" edge and is drawn
dashed. The fill colour is the version's status; links are marks on the rectangle's
edges: supersession closes validity (the right edge), retraction and reinterpretation close
knowledge (the top edge). A new status needs only an entry in ``STATUS_COLOURS``; a new
link only an entry in ``MARKS``.

Pure Python (no Django): the admin turns model rows into ``Bar`` values and embeds the
string it gets back. Every text is escaped, so a statement cannot inject markup.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from xml.sax.saxutils import escape, quoteattr

from citations.extract.intervals import STATUSES

STATUS_COLOURS = {
    "current": "#2e7d32",
    "validity_closed": "#1565c0",
    "knowledge_closed": "#9e9e9e",
    "retracted": "#c62828",
    "reinterpreted": "#6a1b9a",
}
UNKNOWN_STATUS_COLOUR = "#795548"  # drawn (and named in the legend) rather than dropped


@dataclass(frozen=True)
class Mark:
    label: str
    edge: str  # "right": the end of validity; "top": the end of knowledge
    colour: str
    dash: str  # SVG stroke-dasharray, "" for a solid line


# Keyed by the link a version carries (Bar.links).
MARKS = {
    "superseded": Mark("superseded", "right", "#0d47a1", ""),
    "retracted": Mark("retracted", "top", "#b71c1c", ""),
    "reinterpreted": Mark("reinterpreted", "top", "#4a148c", "5 3"),
}


@dataclass(frozen=True)
class Bar:
    """One fact version as the picture needs it."""

    row: str  # the panel it is drawn in (the predicate, for a subject)
    label: str  # the value, written inside the rectangle
    status: str
    valid_from: datetime
    valid_until: datetime | None
    known_from: datetime
    known_until: datetime | None
    links: tuple[str, ...] = ()  # keys of MARKS
    title: str = ""  # the tooltip: the statement, the version


WIDTH = 960
LEFT, RIGHT, TOP = 150, 20, 24
PANEL_HEIGHT = 150
PANEL_GAP = 34
LEGEND_HEIGHT = 40


def _when(moment: datetime) -> float:
    return moment.timestamp()


# Calendar units the valid-time axis is ticked in: the finest whose ticks (at every
# boundary of that unit, or of a multiple of it) number at most MAX_TICKS.
MAX_TICKS = 12
YEAR_STEPS = (1, 2, 5, 10, 20, 50, 100)
MONTH_STEPS = (1, 2, 3, 6)
DAY_STEPS = (1, 2, 7, 14)
HOUR_STEPS = (1, 2, 3, 6, 12)


def _ticks(start: float, end: float) -> list[tuple[float, str]]:
    """(position, label) at calendar boundaries inside [start, end], each labelled with its
    own moment: years on 1 January, months on the 1st, days at midnight (UTC)."""
    span = end - start
    if span > 3 * 365 * 86400:
        return _month_ticks(start, end, 12 * _step(span / (365.25 * 86400), YEAR_STEPS), "%Y")
    if span > 60 * 86400:
        return _month_ticks(start, end, _step(span / (30.44 * 86400), MONTH_STEPS), "%Y-%m")
    if span > 2 * 86400:
        unit, fmt = 86400 * _step(span / 86400, DAY_STEPS), "%Y-%m-%d"
    else:
        unit, fmt = 3600 * _step(span / 3600, HOUR_STEPS), "%m-%d %H:%M"
    value = (start // unit + 1) * unit  # whole days and hours: the epoch is a midnight
    ticks = []
    while value <= end:
        ticks.append((value, datetime.fromtimestamp(value, UTC).strftime(fmt)))
        value += unit
    return ticks


def _step(units: float, steps: tuple[int, ...]) -> int:
    return next((n for n in steps if units / n <= MAX_TICKS), steps[-1])


def _month_ticks(start: float, end: float, every: int, fmt: str) -> list[tuple[float, str]]:
    """The first of every month inside [start, end] whose number (from year 0) divides by
    ``every``: 12 gives each 1 January, 24 every other one."""
    first = datetime.fromtimestamp(start, UTC)
    index = first.year * 12 + first.month  # counts months from January of year 0
    ticks = []
    while (moment := datetime(index // 12, index % 12 + 1, 1, tzinfo=UTC)).timestamp() <= end:
        if index % every == 0:
            ticks.append((moment.timestamp(), moment.strftime(fmt)))
        index += 1
    return ticks


def _valid_bounds(bars: Sequence[Bar], now: datetime) -> tuple[float, float]:
    """(x0, x1): the valid time covered, padded, reaching "now" at least."""
    valid = [_when(b.valid_from) for b in bars] + [
        _when(b.valid_until) for b in bars if b.valid_until
    ]
    x0, x1 = min(valid), max([*valid, _when(now)])
    pad_x = max((x1 - x0) * 0.05, 3600.0)
    return x0 - pad_x, x1 + pad_x


def known_levels(bars: Sequence[Bar], now: datetime) -> list[datetime]:
    """Every moment the ledger learned or stopped believing something, then "now".

    Known time is drawn in steps, one per such moment, in order: a ledger learns in bursts
    (a whole conversation in one second, then nothing for a month), and on a linear scale
    the versions of one burst would collapse into one line.
    """
    moments = {b.known_from for b in bars} | {b.known_until for b in bars if b.known_until}
    return [*sorted(m for m in moments if m < now), now]


def timeline_svg(bars: Sequence[Bar], *, now: datetime, title: str) -> str:
    """The picture of ``bars``, one panel per row in order of first appearance."""
    if not bars:
        return (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="40" role="img" '
            f'aria-label={quoteattr(title)}><text x="8" y="24" font-size="13">'
            "No fact versions to draw.</text></svg>"
        )
    rows: list[str] = list(dict.fromkeys(bar.row for bar in bars))
    lanes = {row: lanes_of([b for b in bars if b.row == row]) for row in rows}
    x0, x1 = _valid_bounds(bars, now)
    levels = known_levels(bars, now)
    plot_w = WIDTH - LEFT - RIGHT
    height = TOP + sum(len(lanes[row]) * PANEL_HEIGHT + PANEL_GAP for row in rows) + LEGEND_HEIGHT

    def x(moment: datetime | None) -> float:
        value = _when(moment or now)
        return LEFT + (value - x0) / (x1 - x0) * plot_w

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" role="img" aria-label={quoteattr(title)} '
        'style="max-width: 100%; height: auto" '
        'font-family="system-ui, sans-serif" font-size="12" class="timeline">',
        f"<title>{escape(title)}</title>",
        f'<text x="{LEFT}" y="14" font-size="12" fill="#444">valid time →, '
        f"known time ↑ (UTC, a step per change of belief); dashed edges are still open</text>",
    ]
    top = TOP
    for row in rows:
        bottom = top + len(lanes[row]) * PANEL_HEIGHT
        out.append(
            f'<g class="panel" data-row={quoteattr(row)} data-lanes="{len(lanes[row])}">'
            f'<rect x="{LEFT}" y="{top}" width="{plot_w}" height="{bottom - top}" '
            'fill="#fafafa" stroke="#ccc"/>'
            f'<text x="{LEFT - 8}" y="{top - 4}" text-anchor="end" '
            f'font-weight="600">{escape(row)}</text>'
            f'<line x1="{x(now):.1f}" y1="{top}" x2="{x(now):.1f}" y2="{bottom}" '
            'stroke="#999" stroke-dasharray="2 3"/>'
        )
        for tick, label in _ticks(x0, x1):
            tx = LEFT + (tick - x0) / (x1 - x0) * plot_w
            out.append(
                f'<line x1="{tx:.1f}" y1="{bottom}" x2="{tx:.1f}" y2="{bottom + 4}" '
                'stroke="#999"/>'
                f'<text x="{tx:.1f}" y="{bottom + 14}" text-anchor="middle" font-size="10" '
                f'fill="#777" class="tick">{label}</text>'
            )
        for number, lane in enumerate(lanes[row]):
            out.append(_lane(lane, number, top + number * PANEL_HEIGHT, levels, now, x))
        out.append("</g>")
        top = bottom + PANEL_GAP
    out.append(_legend(bars, height - LEGEND_HEIGHT + 14))
    out.append("</svg>")
    return "".join(out)


def lanes_of(bars: Sequence[Bar]) -> list[list[Bar]]:
    """The bars of one panel split into lanes, none holding two that overlap.

    Two versions overlap when both their valid and their known intervals do (two values of
    a predicate believed together, "speaks Spanish" and "speaks Portuguese"): drawn in one
    lane they would be one rectangle with two labels printed over each other. Each bar goes
    to the first lane it fits, so a fact's successive versions share a lane.
    """
    lanes: list[list[Bar]] = []
    for bar in bars:
        lane = next((lane for lane in lanes if not any(_overlap(bar, o) for o in lane)), None)
        if lane is None:
            lanes.append(lane := [])
        lane.append(bar)
    return lanes


def _overlap(a: Bar, b: Bar) -> bool:
    def meets(
        start1: datetime, end1: datetime | None, start2: datetime, end2: datetime | None
    ) -> bool:  # half-open; an open end runs forever
        return (end2 is None or start1 < end2) and (end1 is None or start2 < end1)

    valid = meets(a.valid_from, a.valid_until, b.valid_from, b.valid_until) or (
        a.valid_from == b.valid_from  # two instants at one moment
    )
    return valid and meets(a.known_from, a.known_until, b.known_from, b.known_until)


Scale = Callable[[datetime | None], float]  # a moment to its coordinate on the picture


def _lane(
    bars: Sequence[Bar], number: int, top: float, levels: list[datetime], now: datetime, x: Scale
) -> str:
    """One lane of a panel: its own known-time steps up the left, its bars, a rule above."""
    step = PANEL_HEIGHT / len(levels)

    def y(moment: datetime | None) -> float:
        level = len(levels) - 1 if moment is None or moment >= now else levels.index(moment)
        return top + PANEL_HEIGHT - (level + 0.5) * step

    out = [f'<g class="lane" data-lane="{number}">']
    if number:
        out.append(
            f'<line x1="{LEFT}" y1="{top}" x2="{WIDTH - RIGHT}" y2="{top}" stroke="#ccc" '
            'stroke-dasharray="6 3"/>'
        )
    every = max(1, len(levels) // 6)
    for index, moment in enumerate(levels):
        if index % every and index != len(levels) - 1:
            continue
        ty = top + PANEL_HEIGHT - (index + 0.5) * step
        label = "now" if index == len(levels) - 1 else moment.strftime("%Y-%m-%d %H:%M:%S")
        out.append(
            f'<text x="{LEFT - 8}" y="{ty + 4:.1f}" text-anchor="end" font-size="10" '
            f'fill="#777">{label}</text>'
        )
    out.extend(_bar(bar, x, y) for bar in bars)
    out.append("</g>")
    return "".join(out)


def _bar(bar: Bar, x: Scale, y: Scale) -> str:
    left, right = x(bar.valid_from), x(bar.valid_until)
    top, bottom = y(bar.known_until), y(bar.known_from)
    right = max(right, left + 3)  # an instant is still visible
    if bottom - top < 6:  # believed for no time at all (learned and corrected at once)
        top, bottom = (top + bottom) / 2 - 3, (top + bottom) / 2 + 3
    colour = STATUS_COLOURS.get(bar.status, UNKNOWN_STATUS_COLOUR)
    width, height = right - left, bottom - top
    tooltip = bar.title or f"{bar.label} ({bar.status})"
    parts = [
        f'<g class="version" data-status={quoteattr(bar.status)} '
        f"data-links={quoteattr(' '.join(bar.links))}>",
        f"<title>{escape(tooltip)}</title>",
        f'<rect x="{left:.1f}" y="{top:.1f}" width="{width:.1f}" height="{height:.1f}" '
        f'fill="{colour}" fill-opacity="0.28" stroke="{colour}"/>',
    ]
    # Open ends: a dashed edge where the interval runs on past "now".
    if bar.valid_until is None:
        parts.append(
            f'<line x1="{right:.1f}" y1="{top:.1f}" x2="{right:.1f}" y2="{bottom:.1f}" '
            f'stroke="{colour}" stroke-width="2" stroke-dasharray="4 3" class="open-valid"/>'
        )
    if bar.known_until is None:
        parts.append(
            f'<line x1="{left:.1f}" y1="{top:.1f}" x2="{right:.1f}" y2="{top:.1f}" '
            f'stroke="{colour}" stroke-width="2" stroke-dasharray="4 3" class="open-known"/>'
        )
    for key in bar.links:
        mark = MARKS[key]
        ends = (right, top, right, bottom) if mark.edge == "right" else (left, top, right, top)
        dash = f' stroke-dasharray="{mark.dash}"' if mark.dash else ""
        parts.append(
            f'<line x1="{ends[0]:.1f}" y1="{ends[1]:.1f}" x2="{ends[2]:.1f}" y2="{ends[3]:.1f}" '
            f'stroke="{mark.colour}" stroke-width="4"{dash} class="mark mark-{key}"/>'
        )
    if width > 40:
        parts.append(
            f'<text x="{left + 4:.1f}" y="{bottom - 5:.1f}" font-size="11" fill="#1d1d1f">'
            f"{escape(_fit(bar.label, width))}</text>"
        )
    parts.append("</g>")
    return "".join(parts)


def _fit(text: str, width: float) -> str:
    room = max(int(width / 6.5) - 1, 1)
    return text if len(text) <= room else text[: max(room - 1, 1)] + "…"


def _legend(bars: Sequence[Bar], baseline: float) -> str:
    statuses = [s for s in STATUSES if any(b.status == s for b in bars)]
    statuses += sorted({b.status for b in bars} - set(STATUSES))
    links = [k for k in MARKS if any(k in b.links for b in bars)]
    out, at = ['<g class="legend">'], float(LEFT)
    for status in statuses:
        colour = STATUS_COLOURS.get(status, UNKNOWN_STATUS_COLOUR)
        out.append(
            f'<rect x="{at:.0f}" y="{baseline - 10}" width="12" height="12" fill="{colour}" '
            f'fill-opacity="0.28" stroke="{colour}"/><text x="{at + 16:.0f}" y="{baseline}">'
            f"{escape(status)}</text>"
        )
        at += 24 + 7 * len(status)
    for key in links:
        mark = MARKS[key]
        dash = f' stroke-dasharray="{mark.dash}"' if mark.dash else ""
        out.append(
            f'<line x1="{at:.0f}" y1="{baseline - 4}" x2="{at + 14:.0f}" y2="{baseline - 4}" '
            f'stroke="{mark.colour}" stroke-width="4"{dash}/><text x="{at + 18:.0f}" '
            f'y="{baseline}">{escape(mark.label)} ({mark.edge} edge)</text>'
        )
        at += 30 + 7 * (len(mark.label) + 12)
    out.append("</g>")
    return "".join(out)
