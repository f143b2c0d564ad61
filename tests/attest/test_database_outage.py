"""A database that does not answer is a 503 to retry, through the real server and driver."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import httpx
import pytest

from citations.auth import new_token
from tests.live_service import free_port, server_env, serving

GUNICORN = Path(sys.executable).with_name("gunicorn")


@pytest.fixture(params=["postgresql", "sqlite"])
def outage(request, tmp_path):
    """gunicorn serving Attest on a database that refuses every connection."""
    if request.param == "postgresql":
        database_url = f"postgres://postgres@127.0.0.1:{free_port()}/attest"  # nothing listens
    else:
        database_url = f"sqlite:///{tmp_path / 'no-such-dir' / 'attest.sqlite3'}"
    port = free_port()
    env = server_env(
        DATABASE_URL=database_url,
        CACHE_URL="locmemcache://outage",
        SECRET_KEY="outage-test-" + "k" * 40,
        ATTEST_VAR_DIR=str(tmp_path),
        LOG_FORMAT="text",
    )
    command = [str(GUNICORN), "attest.wsgi", "--bind", f"127.0.0.1:{port}", "--workers", "1"]
    log = tmp_path / "server.log"
    with serving(command, port=port, env=env, log=log) as base:
        yield base, log


def _log_once_it_holds(log: Path, *needles: str, timeout: float = 10.0) -> str:
    """The server's log as soon as it holds every needle, or as it is when ``timeout`` ends."""
    deadline = time.monotonic() + timeout
    while True:
        text = log.read_text()
        if all(needle in text for needle in needles) or time.monotonic() > deadline:
            return text
        time.sleep(0.02)


def _is_unavailable(response: httpx.Response) -> None:
    assert response.status_code == 503, response.text
    assert int(response.headers["Retry-After"]) > 0
    assert response.json()["error"]["code"] == "unavailable"


def test_a_database_outage_is_503_unavailable_with_retry_after_not_500(outage):
    base, log = outage
    health = httpx.get(f"{base}/healthz")
    assert health.status_code == 503
    assert int(health.headers["Retry-After"]) > 0
    # An API route: the credential lookup is the first query, and it fails.
    token, _, _ = new_token()
    api = httpx.post(
        f"{base}/v1/recall",
        json={"subject": "user-1"},
        headers={"Authorization": f"Bearer {token}"},
    )
    _is_unavailable(api)
    # A page outside the API: the admin reads the session from the database.
    admin = httpx.get(f"{base}/admin/", cookies={"sessionid": "x" * 32})
    _is_unavailable(admin)
    # Each is logged with its traceback under the ID the caller was given (gunicorn may
    # write the line just after the answer is sent: wait for it, not for a while).
    logged = _log_once_it_holds(log, *(f"[{r.headers['X-Request-ID']} " for r in (api, admin)))
    for response in (api, admin):
        assert f"[{response.headers['X-Request-ID']} " in logged
    assert "Traceback (most recent call last)" in logged
