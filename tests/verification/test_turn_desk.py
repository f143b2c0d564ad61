"""TurnDesk: a fetch thread's redirect hop takes its turn through the request thread, before
the hop is fetched, and never waits on a request thread that has left."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from attest.models import RateCount
from attest.shared_state import in_redis
from verification.network.addresses import parse_url
from verification.network.fetch import Target
from verification.network.politeness import HostRateLimited, TurnDesk, mark_fetch_thread
from verification.network.robots import ALLOW_ALL

pytestmark = pytest.mark.django_db

TARGET = Target(parsed=parse_url("http://canary.example:8080/next"), addresses=("127.0.0.1",))
RULES = (ALLOW_ALL, "")


def _counted() -> int:
    """The turns counted in the database (the limiter's store without Redis)."""
    return sum(RateCount.objects.values_list("count", flat=True))


def test_each_ask_is_counted_by_the_request_thread_before_it_returns(settings):
    settings.ATTEST_HOST_RATE = "2/h"
    desk = TurnDesk()
    seen: list[int | str] = []

    def hop() -> None:
        for _ in range(3):
            try:
                desk.ask(TARGET, RULES)
                seen.append("turn")
            except HostRateLimited:
                seen.append("refused")

    with ThreadPoolExecutor(1, initializer=mark_fetch_thread, initargs=(desk,)) as pool:
        fetch = pool.submit(hop)
        desk.serve([fetch])
        fetch.result()
    desk.close()
    assert seen == ["turn", "turn", "refused"]
    if not in_redis():  # counted in the request thread's connection: this test sees it
        assert _counted() == 3


def test_an_ask_after_the_request_thread_left_is_refused_not_left_waiting():
    desk = TurnDesk()
    asked = threading.Event()
    outcome: list[BaseException] = []

    def hop() -> None:
        asked.set()
        try:
            desk.ask(TARGET, RULES)
        except RuntimeError as exc:
            outcome.append(exc)

    thread = threading.Thread(target=hop)
    thread.start()
    asked.wait(5)
    desk.close()  # the request thread leaves (an error) without serving
    thread.join(5)
    assert not thread.is_alive()
    assert len(outcome) == 1 and "ended" in str(outcome[0])
