"""The shared limiter: a count the cache momentarily fails to give is read again, once."""

from __future__ import annotations

import pytest
from django.core.cache import cache

from attest.errors import CountUnreadable
from attest.ratelimit import RateDecision, rate_limit
from tests.citations.conftest import make_ledger

pytestmark = pytest.mark.django_db


@pytest.fixture
def evicting_add(monkeypatch):
    """The cache's add finds a count, which is evicted before the incr that follows.

    django-ratelimit then gets no count (Redis's incr of a missing key raises ValueError):
    the moment a PostgreSQL run once answered a fuzzed receipt check with a 429.
    """
    real_add = cache.add
    evictions = {"left": 0}

    def add(key, *args, **kwargs):
        added = real_add(key, *args, **kwargs)
        if evictions["left"] <= 0:
            return added
        evictions["left"] -= 1
        cache.delete(key)
        return False  # the count is there as far as add knows, and gone for the incr

    monkeypatch.setattr(cache, "add", add)
    return evictions


def test_a_count_evicted_between_add_and_incr_is_read_again(evicting_add):
    key = "evicted-once"
    assert rate_limit(key=key, rate="5/m", policy="t").used == 1
    evicting_add["left"] = 1
    decision = rate_limit(key=key, rate="5/m", policy="t")
    # The second read starts the count again: allowed, never a 429 the caller did not earn.
    assert decision.allowed
    assert decision.used == 1
    assert evicting_add["left"] == 0


def test_a_count_unreadable_twice_is_an_outage_not_a_pass(evicting_add):
    key = "evicted-twice"
    rate_limit(key=key, rate="5/m", policy="t")
    evicting_add["left"] = 1_000
    with pytest.raises(CountUnreadable):
        rate_limit(key=key, rate="5/m", policy="t")


def test_a_ledger_call_whose_count_stays_unreadable_is_503_unavailable(evicting_add):
    ledger = make_ledger()
    assert ledger.recall("u").status_code == 200
    evicting_add["left"] = 1_000
    response = ledger.recall("u")
    assert response.status_code == 503
    assert int(response["Retry-After"]) > 0
    assert response.json()["error"]["details"] == {"dependency": "cache"}


class _Clock:
    """time.time for django-ratelimit: each count's window is found at one second and its
    time left reckoned at the next (every window ends while the call is counted)."""

    def __init__(self, start: float) -> None:
        self.now = start
        self.calls = 0

    def time(self) -> float:
        self.calls += 1
        if self.calls % 2 == 0:
            self.now += 1
        return self.now


def test_a_window_that_ends_while_a_call_is_counted_is_no_refusal(monkeypatch):
    # time_left came out -1 and the limiter took it for a failed cache: a 429 for a caller
    # far under the limit (a "/s" rate meets this at nearly every second's edge).
    import django_ratelimit.core

    now = 1_800_000_000.0
    monkeypatch.setattr(django_ratelimit.core, "time", _Clock(now))
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
