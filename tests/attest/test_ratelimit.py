"""The shared limiter: a count the cache momentarily fails to give is read again, once;
without a shared cache the counts live in the database, where every process sees them."""

from __future__ import annotations

import time
import uuid
import zlib

import pytest
from django.core.cache import cache

from attest.models import RateCount
from attest.ratelimit import (
    EXPIRY_SLACK,
    RateDecision,
    cache_count_key,
    counts_in_cache,
    rate_limit,
)
from tests.citations.conftest import make_ledger

pytestmark = pytest.mark.django_db


@pytest.fixture
def cache_counts():
    """The tests of the cache's path: counts are there only with Redis."""
    if not counts_in_cache():
        pytest.skip("counts live in the cache only with CACHE_URL=redis://")


@pytest.fixture
def redis_requests(monkeypatch, cache_counts):
    """Every request this process sends Redis (a command, or a pipeline in one go)."""
    import redis

    sent: list[str] = []
    real_command, real_pipeline = redis.Redis.execute_command, redis.client.Pipeline.execute

    def command(self, *args, **kwargs):
        sent.append(str(args[0]))
        return real_command(self, *args, **kwargs)

    def pipeline(self, *args, **kwargs):
        sent.append("pipeline:" + ",".join(str(c[0][0]) for c in self.command_stack))
        return real_pipeline(self, *args, **kwargs)

    monkeypatch.setattr(redis.Redis, "execute_command", command)
    monkeypatch.setattr(redis.client.Pipeline, "execute", pipeline)
    return sent


def test_a_count_is_one_round_trip_to_redis(redis_requests):
    # An add then an incr (django-ratelimit's way) were two; a key evicted between them
    # gave no count.
    key = f"one-trip-{uuid.uuid4()}"  # Redis keeps counts between runs
    assert rate_limit(key=key, rate="5/m", policy="t").used == 1
    assert redis_requests == ["pipeline:SET,INCRBY"]
    assert rate_limit(key=key, rate="5/m", policy="t").used == 2
    assert len(redis_requests) == 2


def test_a_count_and_a_look_name_one_key_with_its_expiry(cache_counts):
    key = f"same-key-{uuid.uuid4()}"
    for _ in range(3):
        counted = rate_limit(key=key, rate="5/m", policy="t")
    looked = rate_limit(key=key, rate="5/m", policy="t", count=False)
    assert (looked.used, counted.used) == (3, 3)
    name, _ = cache_count_key("attest:t", key, "5/m", time.time())
    client = cache.client.get_client(write=True)
    assert client.get(cache.client.make_key(name)) == b"3"
    assert 60 < client.ttl(cache.client.make_key(name)) <= 60 + EXPIRY_SLACK


def test_a_cache_key_keeps_the_form_counts_had_before():
    # django-ratelimit named these counts before attest.ratelimit did: "rl:" and the SHA-256
    # of group, rate in seconds, key and window end. The same names keep the counts made
    # before an upgrade (or by a process not yet upgraded) in the same window.
    import hashlib

    key, now = "10.0.0.1", 1_800_000_000.0
    name, end = cache_count_key("attest:unpaid", key, "300/m", now)
    assert (end - int(now)) in range(60) and end % 60 == zlib.crc32(key.encode()) % 60
    digest = hashlib.sha256(f"attest:unpaid300/60s{key}{end}".encode()).hexdigest()
    assert name == "rl:" + digest
    # A window is (end - 60, end]: at its last second it is still this one, then the next.
    assert cache_count_key("attest:unpaid", key, "300/m", end)[1] == end
    assert cache_count_key("attest:unpaid", key, "300/m", end + 1)[1] == end + 60
    # A one-second window ends at the second it is in.
    assert cache_count_key("attest:unpaid", key, "5/s", now)[1] == int(now)


def test_a_ledger_call_whose_count_cannot_be_read_is_503_unavailable(monkeypatch, cache_counts):
    import redis

    ledger = make_ledger()
    assert ledger.recall("u").status_code == 200

    def refused(self, *args, **kwargs):
        raise redis.ConnectionError("Redis went away")

    monkeypatch.setattr(redis.client.Pipeline, "execute", refused)
    response = ledger.recall("u")
    assert response.status_code == 503
    assert int(response["Retry-After"]) > 0
    assert response.json()["error"]["details"] == {"dependency": "cache"}


class _Clock:
    """time.time for the cache's path: each count's window is found at one second and its
    time left reckoned at the next (every window ends while the call is counted)."""

    def __init__(self, start: float) -> None:
        self.now = start
        self.calls = 0

    def time(self) -> float:
        self.calls += 1
        if self.calls % 2 == 0:
            self.now += 1
        return self.now


def test_a_window_that_ends_while_a_call_is_counted_is_no_refusal(monkeypatch, cache_counts):
    # time_left came out -1 and the limiter took it for a failed cache: a 429 for a caller
    # far under the limit (a "/s" rate meets this at nearly every second's edge).
    import attest.ratelimit

    now = 1_800_000_000.0
    monkeypatch.setattr(attest.ratelimit, "time", _Clock(now))
    decision = rate_limit(key="edge", rate="100/s", policy="t")
    assert decision.allowed
    assert (decision.used, decision.reset) == (1, 0)


def test_a_refusal_at_a_window_s_last_instant_gives_one_wait_in_both_headers():
    # The window's time left reads 0, yet the next request can pass only in a second.
    refused = RateDecision(policy="unpaid", limit=3, window=60, used=4, reset=0)
    assert refused.wait == 1
    assert refused.headers()["RateLimit"] == '"unpaid";r=0;t=1'
    passed = RateDecision(policy="unpaid", limit=3, window=60, used=3, reset=0)
    assert passed.headers()["RateLimit"] == '"unpaid";r=0;t=0'


@pytest.fixture
def database_counts(settings):
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    assert not counts_in_cache()


class _FixedClock:
    def __init__(self, now: float) -> None:
        self.now = now

    def time(self) -> float:
        return self.now


def test_without_redis_the_counts_are_rows_every_process_reads(database_counts, monkeypatch):
    import attest.ratelimit

    clock = _FixedClock(1_800_000_000.0)
    monkeypatch.setattr(attest.ratelimit, "time", clock)
    used = [rate_limit(key="10.0.0.1", rate="3/m", policy="t").used for _ in range(4)]
    assert used == [1, 2, 3, 4]
    assert not rate_limit(key="10.0.0.1", rate="3/m", policy="t", count=False).allowed
    # The count is the table's, not this process's memory: another worker reads the row.
    row = RateCount.objects.get(bucket="t:3/m:10.0.0.1")
    assert row.count == 5 - 1
    looked = rate_limit(key="10.0.0.1", rate="3/m", policy="t", count=False)
    assert (looked.used, looked.reset) == (4, row.window_end - int(clock.now))
    assert 1 <= looked.reset <= 60
    # Another rate, another address: counts of their own.
    assert rate_limit(key="10.0.0.1", rate="5/m", policy="t").used == 1
    assert rate_limit(key="10.0.0.2", rate="3/m", policy="t").used == 1


def test_a_database_count_starts_again_in_the_next_window(database_counts, monkeypatch):
    import attest.ratelimit

    clock = _FixedClock(1_800_000_000.0)
    monkeypatch.setattr(attest.ratelimit, "time", clock)
    first = rate_limit(key="k", rate="2/m", policy="t")
    rate_limit(key="k", rate="2/m", policy="t")
    assert not rate_limit(key="k", rate="2/m", policy="t").allowed
    clock.now += first.reset  # the window's end: the next call is the new window's first
    again = rate_limit(key="k", rate="2/m", policy="t")
    assert (again.used, again.reset) == (1, 60)
    # A lapsed bucket is swept once a minute; the live one stays.
    attest.ratelimit._next_sweep = 0.0
    RateCount.objects.create(bucket="t:2/m:gone", window_end=int(clock.now) - 1, count=9)
    rate_limit(key="k", rate="2/m", policy="t")
    assert set(RateCount.objects.values_list("bucket", flat=True)) == {"t:2/m:k"}
