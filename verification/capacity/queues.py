"""The capacity limits every server process shares: the match queue, the PDF queue and the
per-caller bucket of uncharged failed batches.

The rules are the pure functions of ``verification.capacity.limits``; the state lives in
``attest.shared_state`` (Redis or the database), never in process memory.
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from django.conf import settings

from attest.errors import OverCapacity, RateLimited
from attest.metrics import QUEUE_DEPTH, QUEUE_WAIT_SECONDS
from attest.shared_state import change_state, in_redis, read_state, run_script
from billing.trial import trial_bucket
from verification.capacity import limits

# How often a waiting holder looks whether its turn has come.
POLL_SECONDS = 0.05


def clock() -> float:
    """Wall-clock seconds: every process (and host) reads the shared limits on the same clock."""
    return time.time()


@dataclass(frozen=True)
class SharedQueue:
    """A few holders work at once across every process; a short queue waits behind them."""

    name: str
    reason: str  # details.reason of the 503 when it is full
    message: str
    retry_after: int
    lease_seconds: float  # a place not left within this (a crashed process) lapses
    max_wait_seconds: float  # a holder still waiting after this gives up with the 503
    sizes: Callable[[], limits.QueueLimits]

    @property
    def key(self) -> str:
        return f"queue:{self.name}"

    def full(self) -> OverCapacity:
        return OverCapacity(
            self.message, details={"reason": self.reason}, retry_after=self.retry_after
        )

    def has_room(self) -> bool:
        return limits.queue_has_room(read_state(self.key), now=clock(), limits=self.sizes())

    def ensure_room(self) -> None:
        """Raise the 503 now if the queue is already full (a check before payment)."""
        if not self.has_room():
            raise self.full()

    def join(self, count: int = 1) -> QueuePlace:
        """Take ``count`` places at the end of the queue, all or none; the 503 if they don't fit."""
        tokens = [uuid.uuid4().hex for _ in range(count)]
        sizes = self.sizes()

        def take(holders):
            joined = limits.queue_join(
                holders, tokens, now=clock(), lease=self.lease_seconds, limits=sizes
            )
            return (holders, False) if joined is None else (joined, True)

        if not change_state(self.key, take, keep_seconds=self.lease_seconds):
            raise self.full()
        return QueuePlace(queue=self, tokens=tokens)

    def join_some(self, count: int) -> QueuePlace:
        """Take up to ``count`` places at the end of the queue, as many as fit; the 503
        only when not one does (the queue is full, so waiting helps)."""
        wanted = [uuid.uuid4().hex for _ in range(count)]
        sizes = self.sizes()

        def take(holders):
            joined = limits.queue_join_some(
                holders, wanted, now=clock(), lease=self.lease_seconds, limits=sizes
            )
            return (holders, None) if joined is None else joined

        taken = change_state(self.key, take, keep_seconds=self.lease_seconds)
        if not taken:
            raise self.full()
        return QueuePlace(queue=self, tokens=taken)


@dataclass
class QueuePlace:
    """Places one request holds in a shared queue; leave them, however the work ends."""

    queue: SharedQueue
    tokens: list[str]
    left: set[str] = field(default_factory=set)
    joined_at: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        QUEUE_DEPTH.labels(self.queue.name).inc(len(self.tokens))

    def turn_came(self) -> None:
        """A place's turn to work came: how long it waited (one observation per place)."""
        QUEUE_WAIT_SECONDS.labels(self.queue.name).observe(time.monotonic() - self.joined_at)

    def turns(self) -> set[str]:
        """The tokens (not yet left) whose turn to work has come."""
        mine = [t for t in self.tokens if t not in self.left]
        state = read_state(self.queue.key)
        return limits.queue_turns(state, mine, now=clock(), limits=self.queue.sizes())

    def wait_turn(self) -> None:
        """Block until the first place's turn comes; the queue's 503 if it never does in time."""
        deadline = time.monotonic() + self.queue.max_wait_seconds
        while self.tokens[0] not in self.turns():
            if time.monotonic() > deadline:
                raise self.queue.full()
            time.sleep(POLL_SECONDS)
        self.turn_came()

    def renew(self, tokens: list[str]) -> None:
        """Start these places' leases again: a place that reads one PDF after another."""

        def extend(holders):
            renewed = limits.queue_renew(
                holders, tokens, now=clock(), lease=self.queue.lease_seconds
            )
            return (renewed or None), None

        change_state(self.queue.key, extend, keep_seconds=self.queue.lease_seconds)

    def leave(self, tokens: list[str] | None = None) -> None:
        going = [t for t in (tokens or self.tokens) if t not in self.left]
        if not going:
            return
        self.left.update(going)
        QUEUE_DEPTH.labels(self.queue.name).dec(len(going))

        def drop(holders):
            remaining = limits.queue_leave(holders, going, now=clock())
            return (remaining or None), None

        change_state(self.queue.key, drop, keep_seconds=self.queue.lease_seconds)

    def __enter__(self) -> QueuePlace:
        return self

    def __exit__(self, *exc_info) -> None:
        self.leave()


MATCH_QUEUE = SharedQueue(
    name="match",
    reason="match_queue_full",
    message="Too many batches are being matched right now; retry after Retry-After seconds.",
    retry_after=3,
    lease_seconds=180,
    max_wait_seconds=60,
    sizes=lambda: limits.QueueLimits(settings.ATTEST_MATCH_SLOTS, settings.ATTEST_MATCH_QUEUE),
)

# --- uncharged failed batches ----------------------------------------------------

# The seed's bucket: 6 places per caller IP, one back every 10 seconds.
UNCHARGED_FAILURES = limits.BucketRule(size=6, refill_seconds=10.0)


def _bucket_key(client_ip: str) -> str:
    # An unknown caller (no address) shares one bucket with every other unknown caller.
    return f"uncharged:{trial_bucket(client_ip) or 'unknown'}"


def _over_bucket(state) -> RateLimited:
    wait = limits.bucket_wait(state, now=clock(), rule=UNCHARGED_FAILURES)
    return RateLimited(
        f"This address has used its {UNCHARGED_FAILURES.size} uncharged failed batches a minute "
        "(running batches hold a place too); retry after Retry-After seconds.",
        details={"reason": "uncharged_failures"},
        retry_after=wait,
    )


# After this long untouched a bucket is full again, the same as no state at all.
BUCKET_KEEP_SECONDS = UNCHARGED_FAILURES.size * UNCHARGED_FAILURES.refill_seconds


def failures_ensure_room(*, client_ip: str) -> None:
    """The 429 now, before any page is fetched, if the caller has no place left."""
    state = read_state(_bucket_key(client_ip))
    if limits.bucket_level(state, now=clock(), rule=UNCHARGED_FAILURES) < 1:
        raise _over_bucket(state)


def failures_take(*, client_ip: str) -> None:
    """Hold one place while a batch runs; the 429 if another batch took the last one."""

    def take(state):
        taken = limits.bucket_take(state, now=clock(), rule=UNCHARGED_FAILURES)
        return (state, (False, state)) if taken is None else (taken, (True, taken))

    ok, state = change_state(_bucket_key(client_ip), take, keep_seconds=BUCKET_KEEP_SECONDS)
    if not ok:
        raise _over_bucket(state)


def failures_use(*, client_ip: str) -> None:
    """Use one place for good (it comes back with the refill): a paid single call refused
    after its payment verified. None left: nothing to use, the next call meets the 429."""

    def use(state):
        taken = limits.bucket_take(state, now=clock(), rule=UNCHARGED_FAILURES)
        return (state if taken is None else taken), None

    change_state(_bucket_key(client_ip), use, keep_seconds=BUCKET_KEEP_SECONDS)


def failures_give_back(*, client_ip: str) -> None:
    """Return the place a batch held: it did not end with every citation failed."""

    def give(state):
        new = limits.bucket_give_back(state, now=clock(), rule=UNCHARGED_FAILURES)
        return new, None

    change_state(_bucket_key(client_ip), give, keep_seconds=BUCKET_KEEP_SECONDS)


# --- unpaid checks in flight -----------------------------------------------------

# A place not given back (a process that died mid-check) lapses after this: longer than
# a resolver's answer and a robots.txt wait and fetch together.
UNPAID_CHECKS_LEASE = 30.0
UNPAID_CHECKS_RETRY_AFTER = 3


def _unpaid_checks_key(client_ip: str) -> str:
    return f"unpaid-checks:{trial_bucket(client_ip) or 'unknown'}"


# The same rules as limits.queue_join (all or none) and limits.queue_leave, as Lua run in
# Redis: a place taken or given back in one round trip, not a WATCH/MULTI change's three.
# A refused join writes nothing; the state stays the JSON list of [token, expires_at].
# (Lua's JSON keeps 14 significant digits: an expiry to the tenth of a millisecond.)
_JOIN_LUA = """
local now, lease, places = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local raw = redis.call("GET", KEYS[1])
local live = {}
if raw then
  for _, holder in ipairs(cjson.decode(raw)) do
    if holder[2] > now then live[#live + 1] = holder end
  end
end
if #live + #ARGV - 4 > places then return 0 end
for i = 5, #ARGV do live[#live + 1] = {ARGV[i], now + lease} end
redis.call("SET", KEYS[1], cjson.encode(live), "EX", ARGV[4])
return 1
"""
_LEAVE_LUA = """
local raw = redis.call("GET", KEYS[1])
if not raw then return 0 end
local now = tonumber(ARGV[1])
local gone = {}
for i = 3, #ARGV do gone[ARGV[i]] = true end
local live = {}
for _, holder in ipairs(cjson.decode(raw)) do
  if holder[2] > now and not gone[holder[1]] then live[#live + 1] = holder end
end
local kept = "[]"
if #live > 0 then kept = cjson.encode(live) end
redis.call("SET", KEYS[1], kept, "EX", ARGV[2])
return 1
"""


def _keep(seconds: float) -> int:
    return max(1, math.ceil(seconds))  # what change_state keeps a state for


def _take_unpaid_place(key: str, token: str, sizes: limits.QueueLimits) -> bool:
    if in_redis():
        args: list[str | int | float] = [clock(), UNPAID_CHECKS_LEASE, sizes.places]
        args += [_keep(UNPAID_CHECKS_LEASE), token]
        return bool(run_script(_JOIN_LUA, key, args))

    def take(holders):
        joined = limits.queue_join(
            holders, [token], now=clock(), lease=UNPAID_CHECKS_LEASE, limits=sizes
        )
        return (holders, False) if joined is None else (joined, True)

    return change_state(key, take, keep_seconds=UNPAID_CHECKS_LEASE)


def _give_back_unpaid_place(key: str, token: str) -> None:
    if in_redis():
        run_script(_LEAVE_LUA, key, [clock(), _keep(UNPAID_CHECKS_LEASE), token])
        return

    def drop(holders):
        # Kept when empty (it lapses with the lease): in the database store, deleting
        # the caller's row and creating it again on the next call cost two statements
        # more a call and Django's delete collector (1.2-1.4 ms of CPU for the place
        # taken and given back on SQLite, 0.8 ms with the row kept).
        return limits.queue_leave(holders, [token], now=clock()), None

    change_state(key, drop, keep_seconds=UNPAID_CHECKS_LEASE)


@contextmanager
def unpaid_checks_place(*, client_ip: str) -> Iterator[None]:
    """Hold one of the caller's places for the checks made before an offer (resolving a
    host, reading robots.txt); the 429 ``unpaid_in_flight`` when all of them are held.

    So one caller who does not pay holds at most ``ATTEST_UNPAID_IN_FLIGHT`` workers with
    slow sites, whatever the rate of its requests.
    """
    key, token = _unpaid_checks_key(client_ip), uuid.uuid4().hex
    sizes = limits.QueueLimits(running=settings.ATTEST_UNPAID_IN_FLIGHT, waiting=0)
    if not _take_unpaid_place(key, token, sizes):
        raise RateLimited(
            f"This address already has {sizes.running} unpaid requests being checked "
            "(their sites resolved and robots.txt read); retry after Retry-After seconds, "
            "or send a payment.",
            details={"reason": "unpaid_in_flight", "limit": sizes.running},
            retry_after=UNPAID_CHECKS_RETRY_AFTER,
        )
    try:
        yield
    finally:
        _give_back_unpaid_place(key, token)
