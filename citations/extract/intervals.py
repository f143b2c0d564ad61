"""Interval rules of the bitemporal ledger: membership, overlap, status, and as-of views."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

STATUSES = ("current", "validity_closed", "knowledge_closed", "retracted", "reinterpreted")


@dataclass(frozen=True)
class Interval:
    """A time interval; ``end`` None means still open. Inclusivity is explicit at both ends."""

    start: datetime
    end: datetime | None = None
    start_inclusive: bool = True
    end_inclusive: bool = False

    def __post_init__(self) -> None:
        if self.end is not None and self.end < self.start:
            raise ValueError("an interval cannot end before it starts")

    @property
    def is_open(self) -> bool:
        return self.end is None

    @property
    def is_empty(self) -> bool:
        if self.end is None or self.end > self.start:
            return False
        return not (self.start_inclusive and self.end_inclusive)

    def contains(self, moment: datetime) -> bool:
        if moment < self.start or (moment == self.start and not self.start_inclusive):
            return False
        if self.end is None:
            return True
        return moment < self.end or (moment == self.end and self.end_inclusive)

    def overlaps(self, other: Interval) -> bool:
        """True when some instant lies in both intervals."""
        if self.is_empty or other.is_empty:
            return False
        return _before_end(other.start, other.start_inclusive, self) and _before_end(
            self.start, self.start_inclusive, other
        )

    def closed_at(self, moment: datetime) -> Interval:
        """This interval ended at ``moment`` (exclusive), which must not precede its start."""
        if self.end is not None and moment > self.end:
            raise ValueError("closing can only shorten an interval")
        return replace(self, end=moment, end_inclusive=False)

    def as_seen_at(self, moment: datetime) -> Interval:
        """The interval as it was recorded at ``moment``: an end recorded later is not yet known."""
        if self.end is not None and moment < self.end:
            return replace(self, end=None, end_inclusive=False)
        return self


def _before_end(moment: datetime, inclusive: bool, interval: Interval) -> bool:
    """Whether an interval starting at ``moment`` begins before ``interval`` ends."""
    if interval.end is None:
        return True
    if moment < interval.end:
        return True
    return moment == interval.end and inclusive and interval.end_inclusive


def derive_status(*, valid: Interval, known: Interval, retracted: bool, reinterpreted: bool) -> str:
    """The seed's status table: a closed known interval says why, else validity decides."""
    if known.end is not None:
        if retracted:
            return "retracted"
        if reinterpreted:
            return "reinterpreted"
        return "knowledge_closed"
    if retracted or reinterpreted:
        raise ValueError("a retracted or reinterpreted fact has a closed known interval")
    return "current" if valid.end is None else "validity_closed"


def status_as_of(
    *,
    valid: Interval,
    known: Interval,
    retracted: bool,
    reinterpreted: bool,
    known_at: datetime,
) -> str:
    """Status of a version as the ledger saw it at ``known_at`` (which the version covers)."""
    if not known.contains(known_at):
        raise ValueError("the version was not believed at that known time")
    if known.end is not None and known_at < known.end:
        return derive_status(
            valid=valid, known=known.as_seen_at(known_at), retracted=False, reinterpreted=False
        )
    return derive_status(valid=valid, known=known, retracted=retracted, reinterpreted=reinterpreted)
