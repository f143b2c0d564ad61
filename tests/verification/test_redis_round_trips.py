"""What the shared limits send to a real Redis (production's shared store), counted with
Redis's own MONITOR, so their round trips cannot creep back."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest

from attest.ratelimit import rate_limit
from attest.shared_state import in_redis, redis_connection
from tests.verification.conftest import page
from verification.capacity import queues

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not in_redis(), reason="counts what is sent to a real Redis"),
]

ARTICLE = "<html><body><p>The committee said the review is overdue.</p></body></html>"
# At most this many commands one trial verify/quote call sends, robots.txt known: the
# unpaid count (MULTI, SET NX, INCRBY, EXEC), the unpaid-checks place taken (EVALSHA),
# robots.txt read (GET), the site's budget looked at (GET), the place given back
# (EVALSHA), the site's turn taken (MULTI, SET NX, INCRBY, EXEC).
TRIAL_CALL_MOST = 12


def _sent(work: Callable[[], object]) -> list[str]:
    """The commands sent to this test's Redis database while ``work`` ran (MONITOR sees
    every client's: other databases are left out, and an end marker bounds them; those a
    script runs inside Redis are not sent, and left out too)."""
    client = redis_connection()
    db = client.connection_pool.connection_kwargs.get("db", 0)
    marker = f"attest:test:end:{uuid.uuid4().hex}"
    with client.monitor() as monitor:
        work()
        client.get(marker)
        commands: list[str] = []
        for seen in monitor.listen():
            if seen["db"] != db or seen["client_type"] == "lua":
                continue
            if seen["command"].startswith("SELECT"):
                continue
            if marker in seen["command"]:
                return commands
            commands.append(seen["command"])
    raise AssertionError("MONITOR ended early")


def _verbs(commands: list[str]) -> list[str]:
    return [command.split(" ")[0].upper() for command in commands]


def test_an_unpaid_checks_place_is_taken_and_given_back_in_one_command_each(settings):
    settings.ATTEST_UNPAID_IN_FLIGHT = 2
    ip = f"198.51.100.{uuid.uuid4().int % 200}"

    def hold():
        with queues.unpaid_checks_place(client_ip=ip):
            pass

    hold()  # the scripts are loaded into Redis once
    assert _verbs(_sent(hold)) == ["EVALSHA", "EVALSHA"]


def test_a_look_at_a_count_is_one_get():
    key = uuid.uuid4().hex
    rate_limit(key=key, rate="5/m", policy="test-look")

    def look():
        assert rate_limit(key=key, rate="5/m", policy="test-look", count=False).used == 1

    assert _verbs(_sent(look)) == ["GET"]


def test_a_trial_call_sends_few_commands(api, pages, settings):
    settings.ATTEST_TRIAL_CALLS_PER_DAY = 5
    pages.routes["/article"] = page(ARTICLE)
    body = {"url": pages.url("/article"), "quote": "the review is overdue"}
    api.post("/v1/verify/quote", body, format="json")  # robots.txt read and kept

    def call():
        response = api.post("/v1/verify/quote", body, format="json")
        assert response.status_code == 200, response.content
        assert response.json()["tier"] == "trial"

    sent = _sent(call)
    listing = "\n".join(command[:120] for command in sent)
    assert len(sent) <= TRIAL_CALL_MOST, f"{len(sent)} commands:\n{listing}"
