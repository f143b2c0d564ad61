"""Relative and absolute date phrases resolved against the message time, precision kept."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

MONTHS = {
    name: index
    for index, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "a couple of": 2,
    "a few": 3,
}
PRECISIONS = ("instant", "day", "week", "month", "year")

_MONTH = r"(?P<month>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_NUMBER = r"(?P<count>\d{1,3}|" + "|".join(sorted(NUMBERS, key=len, reverse=True)) + r")"
_DAY = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"

# Each pattern is matched at the end of a clause; order matters (most specific first).
DATE_PATTERNS: tuple[tuple[str, str], ...] = (
    ("iso", r"(?:on |since |from )?(?P<iso>(?:19|20)\d\d-\d\d-\d\d)"),
    ("day_month_year", rf"(?:on |since |from )?(?:the )?{_DAY} (?:of )?{_MONTH},? {_YEAR}"),
    ("month_day_year", rf"(?:on |since |from )?{_MONTH} {_DAY},? {_YEAR}"),
    ("day_month", rf"(?:on |since |from )?(?:the )?{_DAY} (?:of )?{_MONTH}"),
    ("month_day", rf"(?:on |since |from )?{_MONTH} {_DAY}"),
    ("month_year", rf"(?:in |since |from )?{_MONTH},? {_YEAR}"),
    ("month", rf"(?:in |since |from |last |this ){_MONTH}"),
    ("year", rf"(?:in |since |from ){_YEAR}"),
    ("yesterday", r"(?P<yesterday>yesterday)"),
    ("today", r"(?P<today>today|this morning|this afternoon|this evening|tonight)"),
    ("last_unit", r"(?:since )?last (?P<unit>week|month|year)"),
    ("this_unit", r"(?:since |earlier )?this (?P<unit>week|month|year)"),
    ("ago", rf"(?:since )?{_NUMBER} (?P<unit>day|week|month|year)s? ago"),
)
_COMPILED = tuple(
    (kind, re.compile(r"(?:^|\s)(?P<phrase>" + pattern + r")$", re.IGNORECASE))
    for kind, pattern in DATE_PATTERNS
)


@dataclass(frozen=True)
class ResolvedDate:
    """A point in time with the precision the words gave it, and where the phrase sat."""

    at: datetime
    precision: str
    phrase_start: int  # code point offset of the phrase in the clause it was found in


class UnusableDate(ValueError):
    """No calendar date, or a time after the message: the extractor drops the fact."""


def _start_of(moment: datetime, unit: str) -> datetime:
    day = moment.replace(hour=0, minute=0, second=0, microsecond=0)
    if unit == "day":
        return day
    if unit == "week":
        return day - timedelta(days=day.weekday())
    if unit == "month":
        return day.replace(day=1)
    return day.replace(month=1, day=1)


def _minus_months(moment: datetime, months: int) -> datetime:
    index = moment.year * 12 + (moment.month - 1) - months
    return moment.replace(year=index // 12, month=index % 12 + 1, day=1)


def _resolve(kind: str, match: re.Match[str], now: datetime) -> tuple[datetime, str]:
    groups = match.groupdict()
    # The sender's calendar: "in March" written just after midnight on 1 March in
    # Helsinki is this March, though it is still February in UTC.
    zone = now.tzinfo
    if kind == "iso":
        return datetime.fromisoformat(groups["iso"]).replace(tzinfo=zone), "day"
    month = MONTHS.get((groups.get("month") or "").lower(), 0)  # 0: a kind without one
    if kind in {"day_month_year", "month_day_year"}:
        return datetime(int(groups["year"]), month, int(groups["day"]), tzinfo=zone), "day"
    if kind in {"day_month", "month_day"}:
        year = now.year if (month, int(groups["day"])) <= (now.month, now.day) else now.year - 1
        return datetime(year, month, int(groups["day"]), tzinfo=zone), "day"
    if kind == "month_year":
        return datetime(int(groups["year"]), month, 1, tzinfo=zone), "month"
    if kind == "month":
        # A bare month is the most recent one that has begun by the message time.
        year = now.year if month <= now.month else now.year - 1
        return datetime(year, month, 1, tzinfo=zone), "month"
    if kind == "year":
        return datetime(int(groups["year"]), 1, 1, tzinfo=zone), "year"
    if kind == "yesterday":
        return _start_of(now, "day") - timedelta(days=1), "day"
    if kind == "today":
        return _start_of(now, "day"), "day"
    unit = groups["unit"].lower()
    if kind == "this_unit":
        return _start_of(now, unit), unit
    count = 1 if kind == "last_unit" else NUMBERS.get(groups["count"].lower())
    if count is None:
        count = int(groups["count"])
    if unit == "day":
        return _start_of(now - timedelta(days=count), "day"), "day"
    if unit == "week":
        return _start_of(now - timedelta(weeks=count), "week"), "week"
    if unit == "month":
        return _minus_months(_start_of(now, "day"), count), "month"
    return _start_of(now, "year").replace(year=now.year - count), "year"


def find_trailing_date(clause: str, now: datetime) -> ResolvedDate | None:
    """Resolve the date phrase that ends ``clause``, if any, against message time ``now``.

    Days, months and years are those of ``now``'s own offset: the sender's calendar.

    Raises UnusableDate when the phrase is no calendar date or names a time after ``now``:
    a fact cannot have begun after the message that states it.
    """
    for kind, pattern in _COMPILED:
        match = pattern.search(clause)
        if match is None:
            continue
        try:
            at, precision = _resolve(kind, match, now)
        except (ValueError, OverflowError):
            # "31 February", or a day before year 1 from an early message: not a date.
            raise UnusableDate(match.group("phrase")) from None
        if at > now:
            raise UnusableDate(match.group("phrase"))
        return ResolvedDate(at=at, precision=precision, phrase_start=match.start("phrase"))
    return None
