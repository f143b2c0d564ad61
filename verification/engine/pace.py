"""Crossref pacing as plain values: two minute budgets, Crossref's own limit, its back-off.

The state is read and written only while the one-lookup-at-a-time lock is held
(``verification.crossref.pace``), so every process sees the same numbers and
no update races another. Times are wall-clock seconds since the epoch, because
the state is shared between processes and hosts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any

WINDOW_SECONDS = 60.0
# Lookups a minute, per tier, from separate budgets: trial calls never use the paid one.
BUDGETS = {"paid": 120, "trial": 6}
# A 429 that says nothing about when to come back keeps us away for a whole minute.
DEFAULT_BACKOFF_SECONDS = 60.0
MAX_BACKOFF_SECONDS = 3600.0
# Requests a little slower than the limit Crossref advertises, so clock jitter on its
# side never tips one over.
SPACING_MARGIN = 1.1

_INTERVAL = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|s|m|h)?")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def advertised_spacing(limit: str | None, interval: str | None) -> float | None:
    """Seconds between requests that Crossref's ``X-Rate-Limit-*`` headers allow, or None.

    Each header may repeat a value (``50, 50`` and ``1s, 1s`` have been seen); the
    strictest reading is kept: the smallest limit over the longest interval.
    """
    if not limit or not interval:
        return None
    limits = [int(v) for v in re.findall(r"\d+", limit)]
    seconds = []
    for value in interval.split(","):
        found = _INTERVAL.fullmatch(value.strip())
        if found:
            seconds.append(float(found.group(1)) * _UNIT_SECONDS[found.group(2) or "s"])
    limits = [v for v in limits if v > 0]
    if not limits or not seconds:
        return None
    return min(max(seconds) / min(limits), WINDOW_SECONDS)


def retry_after_seconds(value: str | None, *, now: float) -> float | None:
    """A ``Retry-After`` header in seconds from now (delay-seconds or an HTTP date), or None."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None or when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - now)


@dataclass
class PaceState:
    """Shared pacing: lookups started per tier in the last minute, request spacing, back-off."""

    started: dict[str, list[float]] = field(default_factory=dict)
    spacing: float = 0.0  # seconds between requests, from Crossref's advertised limit
    next_request_at: float = 0.0
    not_before: float = 0.0  # Crossref answered 429: no request until then

    @classmethod
    def from_json(cls, data: Any) -> PaceState:
        if not isinstance(data, dict):
            return cls()
        return cls(
            started={k: [float(t) for t in v] for k, v in data.get("started", {}).items()},
            spacing=float(data.get("spacing", 0.0)),
            next_request_at=float(data.get("next_request_at", 0.0)),
            not_before=float(data.get("not_before", 0.0)),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "started": self.started,
            "spacing": self.spacing,
            "next_request_at": self.next_request_at,
            "not_before": self.not_before,
        }

    def backing_off(self, now: float) -> bool:
        return now < self.not_before

    def take(self, tier: str, now: float) -> bool:
        """Spend one lookup from the tier's minute budget, or say it is used up."""
        limit = BUDGETS[tier]
        recent = [t for t in self.started.get(tier, []) if now - t < WINDOW_SECONDS]
        if len(recent) >= limit:
            self.started[tier] = recent
            return False
        self.started[tier] = [*recent, now]
        return True

    def wait_before_request(self, now: float) -> float:
        """Seconds to wait before the next request may go to Crossref."""
        return max(0.0, self.next_request_at - now)

    def answered(self, *, sent_at: float, status: int | None, headers: Any, now: float) -> None:
        """Learn from an answer: Crossref's advertised limit, and a 429's back-off."""
        spacing = advertised_spacing(
            headers.get("x-rate-limit-limit"), headers.get("x-rate-limit-interval")
        )
        if spacing is not None:
            self.spacing = spacing * SPACING_MARGIN
        self.next_request_at = sent_at + self.spacing
        if status == 429:
            wait = retry_after_seconds(headers.get("retry-after"), now=now)
            wait = DEFAULT_BACKOFF_SECONDS if wait is None else wait
            self.not_before = now + min(max(wait, self.spacing), MAX_BACKOFF_SECONDS)
