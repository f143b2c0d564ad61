"""The shared queues' metrics: places held (a gauge that returns to zero when every place
is left) and the wait before a place's turn (one observation per place)."""

from __future__ import annotations

import pytest
from prometheus_client import REGISTRY

from verification.capacity.queues import MATCH_QUEUE

pytestmark = pytest.mark.django_db


def _places() -> float:
    return REGISTRY.get_sample_value("attest_capacity_queue_places", {"queue": "match"}) or 0.0


def _waits() -> float:
    return (
        REGISTRY.get_sample_value("attest_capacity_queue_wait_seconds_count", {"queue": "match"})
        or 0.0
    )


def test_places_held_rise_and_fall_and_each_turn_records_its_wait(settings):
    settings.ATTEST_MATCH_SLOTS, settings.ATTEST_MATCH_QUEUE = 2, 2
    held, waited = _places(), _waits()
    first, second = MATCH_QUEUE.join(), MATCH_QUEUE.join()
    assert _places() == held + 2
    first.wait_turn()
    second.wait_turn()
    assert _waits() == waited + 2
    first.leave()
    assert _places() == held + 1
    second.leave()
    second.leave()  # leaving twice gives back nothing twice
    assert _places() == held
