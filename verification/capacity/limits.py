"""Pure rules of the shared capacity limits: a slotted queue and a refilling bucket.

Each function takes the limit's stored state (plain JSON values, as kept in Redis
or the database) and the time, and returns the new state; nothing here reads a
clock, a setting or a store, so every rule is tested without a server.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# A queue's state: its holders in arrival order, each [token, expires_at (unix seconds)].
Holders = list[list]


@dataclass(frozen=True)
class QueueLimits:
    """``running`` holders work at once; up to ``waiting`` more wait their turn behind them."""

    running: int
    waiting: int

    @property
    def places(self) -> int:
        return self.running + self.waiting


def queue_live(holders: Holders | None, now: float) -> Holders:
    """The holders whose lease has not run out (a crashed process's places lapse)."""
    return [list(h) for h in holders or () if h[1] > now]


def queue_join(
    holders: Holders | None, tokens: list[str], *, now: float, lease: float, limits: QueueLimits
) -> Holders | None:
    """The queue with ``tokens`` joined at its end, or None when they do not all fit."""
    live = queue_live(holders, now)
    if len(live) + len(tokens) > limits.places:
        return None
    return live + [[token, now + lease] for token in tokens]


def queue_join_some(
    holders: Holders | None, tokens: list[str], *, now: float, lease: float, limits: QueueLimits
) -> tuple[Holders, list[str]] | None:
    """The queue with as many of ``tokens`` as fit joined at its end, and those tokens;
    None when not one fits."""
    live = queue_live(holders, now)
    taken = tokens[: max(0, limits.places - len(live))]
    if not taken:
        return None
    return live + [[token, now + lease] for token in taken], taken


def queue_renew(holders: Holders | None, tokens: list[str], *, now: float, lease: float) -> Holders:
    """The queue with the lease of ``tokens`` (those still live) running ``lease`` from now."""
    renewed = set(tokens)
    return [[h[0], now + lease] if h[0] in renewed else h for h in queue_live(holders, now)]


def queue_has_room(holders: Holders | None, *, now: float, limits: QueueLimits) -> bool:
    return len(queue_live(holders, now)) < limits.places


def queue_turns(
    holders: Holders | None, tokens: list[str], *, now: float, limits: QueueLimits
) -> set[str]:
    """Which of ``tokens`` may work now: those among the first ``running`` live holders.

    A holder only moves forward as those before it leave, so once its turn has come it
    keeps it; no state needs to change when a turn comes.
    """
    first = {h[0] for h in queue_live(holders, now)[: limits.running]}
    return first.intersection(tokens)


def queue_leave(holders: Holders | None, tokens: list[str], *, now: float) -> Holders:
    gone = set(tokens)
    return [h for h in queue_live(holders, now) if h[0] not in gone]


@dataclass(frozen=True)
class BucketRule:
    """``size`` places, one more every ``refill_seconds`` up to ``size``."""

    size: int
    refill_seconds: float


def bucket_level(state: dict | None, *, now: float, rule: BucketRule) -> float:
    """Places free now: the stored level plus what refilled since, at most ``size``."""
    if not state:
        return float(rule.size)
    refilled = max(0.0, now - state["at"]) / rule.refill_seconds
    return min(float(rule.size), state["level"] + refilled)


def bucket_take(state: dict | None, *, now: float, rule: BucketRule) -> dict | None:
    """The bucket with one place taken, or None when no whole place is free."""
    level = bucket_level(state, now=now, rule=rule)
    if level < 1:
        return None
    return {"level": level - 1, "at": now}


def bucket_give_back(state: dict | None, *, now: float, rule: BucketRule) -> dict:
    level = bucket_level(state, now=now, rule=rule)
    return {"level": min(float(rule.size), level + 1), "at": now}


def bucket_wait(state: dict | None, *, now: float, rule: BucketRule) -> int:
    """Whole seconds until a place is free (at least 1, for a Retry-After header)."""
    missing = 1 - bucket_level(state, now=now, rule=rule)
    return max(1, math.ceil(missing * rule.refill_seconds))
