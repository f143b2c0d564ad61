"""The unpaid limit is one count for the whole instance, however many workers serve it.

A ``make run``-style server (three sync gunicorn workers, no CACHE_URL: the embedded
default, whose local-memory cache each worker has its own copy of) must still refuse the
caller once the instance has answered the limit's worth of free receipt checks.
"""

from __future__ import annotations

import httpx
import pytest

from tests.live_service import gunicorn, migrate, server_env, shared_database

LIMIT = 60
CALLS = 80  # alone, each of three workers would let 3 x 60 through


def _remaining(response: httpx.Response) -> int:
    params = dict(p.split("=") for p in response.headers["RateLimit"].split(";")[1:])
    return int(params["r"])


# A migrated database and three workers start slowly on a loaded machine.
@pytest.mark.timeout(300)
@pytest.mark.django_db(transaction=True)
def test_three_workers_without_a_cache_url_share_one_unpaid_count(tmp_path):
    db_url, needs_migrate = shared_database(tmp_path)
    # An hour's window, so the test never straddles a window's end; the count is the point.
    env = server_env(
        DATABASE_URL=db_url,
        ATTEST_VAR_DIR=str(tmp_path),
        SECRET_KEY="shared-limits-test",
        ATTEST_UNPAID_RATE=f"{LIMIT}/h",
    )
    assert "CACHE_URL" not in env
    if needs_migrate:
        migrate(env)
    with gunicorn(env, workers=3, threads=1) as base, httpx.Client(trust_env=False) as client:
        answers = [
            # A fresh connection each time, so the workers take turns accepting.
            client.post(f"{base}/v1/receipt/verify", json={}, headers={"Connection": "close"})
            for _ in range(CALLS)
        ]
    statuses = [a.status_code for a in answers]
    assert statuses[:LIMIT] == [400] * LIMIT  # checked (an empty body), not refused
    assert statuses[LIMIT:] == [429] * (CALLS - LIMIT)
    # One count: what is left falls by one on every call, whichever worker answered it.
    assert [_remaining(a) for a in answers[:LIMIT]] == list(range(LIMIT - 1, -1, -1))
    assert {_remaining(a) for a in answers[LIMIT:]} == {0}
    assert answers[-1].json()["error"]["details"]["reason"] == "unpaid_requests"
