"""How the ledger shows a fact: one of its versions, as believed now or at a known time.

Shared by the reads (resolve, recall, ranked recall, the inventory); no queries here.
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

from attest.errors import InvalidRequest
from citations.extract.intervals import Interval, status_as_of
from citations.models import Fact, FactVersion, Retraction


def iso_utc(moment: datetime | None) -> str | None:
    """An instant as RFC 3339 in UTC with a Z, the form every ledger response uses."""
    if moment is None:
        return None
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


@dataclass(frozen=True)
class ValidTime:
    """A validity interval with the precision its start was stated with."""

    interval: Interval
    precision: str

    @property
    def start(self) -> datetime:
        return self.interval.start

    @property
    def end(self) -> datetime | None:
        return self.interval.end

    @property
    def start_inclusive(self) -> bool:
        return self.interval.start_inclusive

    @property
    def end_inclusive(self) -> bool:
        return self.interval.end_inclusive


@dataclass(frozen=True)
class FactView:
    """A fact as one of its versions shows it, possibly as seen at an earlier known time."""

    fact: Fact
    version: FactVersion
    status: str
    known: Interval
    retraction: Retraction | None

    @property
    def id(self) -> uuid.UUID:
        return self.fact.pk

    @property
    def tag(self) -> str:
        return version_tag(self.version, self.known, self.status)

    @property
    def valid(self) -> ValidTime:
        return ValidTime(self.version.valid_interval, self.version.valid_precision)


def version_tag(version: FactVersion, known: Interval, status: str) -> str:
    """A short digest that changes whenever what the ledger says about the fact changes."""
    parts = [
        str(version.fact_id),
        str(version.seq),
        repr(version.valid_interval),
        repr(known),
        status,
        str(version.superseded_by_id),
        str(version.retraction_id),
        str(version.reinterpreted_by_id),
    ]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


def fact_view(version: FactVersion, *, known_at: datetime | None = None) -> FactView:
    """A fact as ``version`` shows it; with ``known_at``, as it was believed at that time."""
    known = version.known_interval
    if known_at is None:
        status = version.status
    else:
        status = status_as_of(
            valid=version.valid_interval,
            known=known,
            retracted=version.retraction_id is not None,
            reinterpreted=version.reinterpreted_by_id is not None,
            known_at=known_at,
        )
        known = known.as_seen_at(known_at)
    # A retraction recorded after ``known_at`` was not yet known then.
    retraction = version.retraction if known.end is not None else None
    return FactView(version.fact, version, status, known, retraction)


@dataclass(frozen=True)
class FactPage:
    """A page of facts and the ``next`` object when there are more."""

    facts: list[FactView]
    next: dict[str, str] | None = None


def bad_after() -> InvalidRequest:
    return InvalidRequest(
        "after must be the next value of the previous page, unchanged.", field="after"
    )
