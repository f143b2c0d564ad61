"""A cache use with no fallback of its own fails closed: 503 unavailable, never a 500."""

from __future__ import annotations

import time

import pytest

from tests.citations.conftest import make_ledger
from tests.redis_outage import redis_down, redis_hung

pytestmark = pytest.mark.django_db


def test_ledger_calls_are_503_unavailable_while_their_rate_limit_cannot_be_counted():
    ledger = make_ledger()
    with redis_down():
        response = ledger.client.post("/v1/recall", {"subject": "user-1"}, format="json")
    assert response.status_code == 503
    assert int(response["Retry-After"]) > 0
    error = response.json()["error"]
    assert (error["code"], error["details"]) == ("unavailable", {"dependency": "cache"})
    assert ledger.client.post("/v1/recall", {"subject": "user-1"}, format="json").status_code == 200


def test_a_redis_that_never_answers_is_503_within_seconds_not_a_hung_worker():
    ledger = make_ledger()
    with redis_hung():
        started = time.monotonic()
        response = ledger.client.post("/v1/recall", {"subject": "user-1"}, format="json")
        waited = time.monotonic() - started
    assert response.status_code == 503
    assert response.json()["error"]["details"] == {"dependency": "cache"}
    assert waited < 10  # the socket timeout, not the kernel's minutes
