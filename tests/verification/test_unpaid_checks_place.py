"""The unpaid-checks places, on each store they may live in: Redis (a Lua script a
change) when the suite has one, and the database (make run's)."""

from __future__ import annotations

import uuid

import pytest

from attest.errors import RateLimited
from attest.shared_state import change_state, in_redis, read_state
from verification.capacity import queues

pytestmark = pytest.mark.django_db

STORES = ["database", *(["redis"] if in_redis() else [])]


@pytest.fixture(params=STORES)
def store(request, settings):
    if request.param == "database":
        settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    assert in_redis() == (request.param == "redis")
    settings.ATTEST_UNPAID_IN_FLIGHT = 2
    return request.param


@pytest.fixture
def ip() -> str:
    # A caller of its own per test: Redis keeps its state between tests.
    return f"2001:db8:{uuid.uuid4().int % 65536:x}::1"


def _held(ip: str) -> list:
    return read_state(queues._unpaid_checks_key(ip)) or []


def test_a_place_past_the_limit_is_refused_and_nothing_is_taken(store, ip):
    with queues.unpaid_checks_place(client_ip=ip), queues.unpaid_checks_place(client_ip=ip):
        before = _held(ip)
        with pytest.raises(RateLimited) as refused, queues.unpaid_checks_place(client_ip=ip):
            pytest.fail("a third place was given")
        assert refused.value.details == {"reason": "unpaid_in_flight", "limit": 2}
        assert refused.value.retry_after == queues.UNPAID_CHECKS_RETRY_AFTER
        assert refused.value.status_code == 429
        assert _held(ip) == before
        assert len(before) == 2
        # Another caller's places are its own.
        with queues.unpaid_checks_place(client_ip=f"{ip[:-3]}:1:1::1"):
            pass
    assert _held(ip) == []
    with queues.unpaid_checks_place(client_ip=ip), queues.unpaid_checks_place(client_ip=ip):
        pass


def test_a_place_is_given_back_when_the_checks_raise(store, ip):
    with pytest.raises(ZeroDivisionError), queues.unpaid_checks_place(client_ip=ip):
        assert len(_held(ip)) == 1
        _ = 1 / 0
    assert _held(ip) == []


def test_a_lapsed_place_does_not_count_and_is_dropped(store, ip):
    key = queues._unpaid_checks_key(ip)
    lapsed = [["crashed", queues.clock() - 1], ["alive", queues.clock() + 60]]
    change_state(key, lambda _state: (lapsed, None), keep_seconds=60)
    with queues.unpaid_checks_place(client_ip=ip):
        held = _held(ip)
        assert [h[0] for h in held][:1] == ["alive"]
        assert len(held) == 2
        assert held[1][1] > queues.clock() + queues.UNPAID_CHECKS_LEASE - 5
        with pytest.raises(RateLimited), queues.unpaid_checks_place(client_ip=ip):
            pass
    assert [h[0] for h in _held(ip)] == ["alive"]
    # The state stays one change_state can change.
    assert change_state(key, lambda state: (state, len(state)), keep_seconds=60) == 1
