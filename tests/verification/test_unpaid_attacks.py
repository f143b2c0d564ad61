"""Attacks by callers who do not pay, against a real three-worker gunicorn on loopback.

Each test starts Attest as ``make run`` does (three sync workers, one request each) on the
test database (and the suite's Redis when it runs with one), points it at page servers
of its own, and counts at those servers what the attack made Attest do.
"""

from __future__ import annotations

import contextlib
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler

import httpx
import pytest
from django.conf import settings
from x402.http import decode_payment_required_header

from tests.billing.conftest import NETWORK, PAY_TO, Payer
from tests.live_service import gunicorn, migrate, server_env, shared_database
from tests.verification.conftest import PageServer, page, trickle

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(300)]

WORKERS = 3


@pytest.fixture
def site() -> PageServer:
    """A page server of this test's own: what it sees is only this test's doing."""
    server = PageServer().start()
    server.routes["/robots.txt"] = page("User-agent: *\nAllow: /\n", content_type="text/plain")
    server.routes["/article"] = page("<p>The council approved the budget on Monday.</p>")
    yield server
    server.server.shutdown()


@pytest.fixture
def serve(tmp_path, signing_keys):
    """``with serve(sites, **settings) as base``: Attest on three sync workers."""

    @contextlib.contextmanager
    def start(sites: list[PageServer], **overrides: str):
        db_url, needs_migrate = shared_database(tmp_path)
        env = server_env(
            DATABASE_URL=db_url,
            ATTEST_VAR_DIR=str(tmp_path),
            SECRET_KEY="unpaid-attacks-test",
            ATTEST_SIGNING_KEYS=signing_keys,
            ATTEST_FETCH_ALLOW=",".join(f"127.0.0.1:{s.port}" for s in sites),
            X402_NETWORK=NETWORK,
            X402_PAY_TO=PAY_TO,
            X402_FACILITATOR_URL="",
            **overrides,
        )
        if "redis" in settings.CACHES["default"]["LOCATION"]:
            env["CACHE_URL"] = settings.CACHES["default"]["LOCATION"]
        if needs_migrate:
            migrate(env)
        with gunicorn(env, workers=WORKERS, threads=1) as base:
            yield base

    return start


def _quote(base: str, url: str, headers: dict[str, str] | None = None) -> httpx.Response:
    # A fresh connection each time, so the workers take turns accepting.
    return httpx.post(
        f"{base}/v1/verify/quote",
        json={"url": url, "quote": "approved the budget"},
        headers={"Connection": "close", **(headers or {})},
        timeout=60,
        trust_env=False,
    )


def _reason(response: httpx.Response) -> str:
    return response.json()["error"]["details"].get("reason", "")


# --- 2: a payment header that buys nothing is an unpaid request ---------------------------

LIMIT = 6
ATTACK = 24


def test_a_junk_or_unverified_payment_counts_as_unpaid_and_does_no_outbound_work(
    serve, site: PageServer
):
    other = PageServer().start()  # where the offer is read, so `site` sees only the attack
    other.routes["/article"] = site.routes["/article"]
    try:
        with serve(
            [site, other], ATTEST_UNPAID_RATE=f"{LIMIT}/h", ATTEST_TRIAL_CALLS_PER_DAY="0"
        ) as base:
            offered = _quote(base, other.url("/article"))
            assert offered.status_code == 402, offered.text
            offer = decode_payment_required_header(offered.headers["PAYMENT-REQUIRED"])
            # Signed for one unit instead of the price: well formed, but it does not verify.
            unverified = Payer().pay_tampered(offer, amount="1")
            junk = [{"PAYMENT-SIGNATURE": "garbage"}, {"PAYMENT-SIGNATURE": unverified}]
            with ThreadPoolExecutor(8) as pool:
                answers = list(
                    pool.map(
                        lambda i: _quote(base, site.url("/article"), junk[i % 2]), range(ATTACK)
                    )
                )
            bad_body = httpx.post(
                f"{base}/v1/verify/quote",
                json={"url": site.url("/article")},
                headers={"PAYMENT-SIGNATURE": "garbage"},
                timeout=60,
                trust_env=False,
            )
    finally:
        other.server.shutdown()
    statuses = [a.status_code for a in answers]
    # The offer's request took one place; every junk payment took one more.
    assert statuses.count(402) == LIMIT - 1, statuses
    assert statuses.count(429) == ATTACK - (LIMIT - 1), statuses
    assert {_reason(a) for a in answers if a.status_code == 429} == {"unpaid_requests"}
    refused = {_reason(a) for a in answers if a.status_code == 402}
    assert "malformed_payment" in refused and len(refused) == 2, refused
    # Not one DNS answer or robots.txt read was spent on them: the site saw nothing.
    assert site.paths() == []
    # A bad body is still a 400, whatever the payment header.
    assert bad_body.status_code == 400, bad_body.text


# --- 3: unpaid callers cannot hold every worker -------------------------------------------


class Crowd:
    """Counts how many fetches of a path are open at once, and the most there were."""

    def __init__(self, handler) -> None:
        self.handler, self.open, self.most, self.total = handler, 0, 0, 0
        self.lock = threading.Lock()

    def __call__(self, h: BaseHTTPRequestHandler) -> None:
        with self.lock:
            self.open, self.total = self.open + 1, self.total + 1
            self.most = max(self.most, self.open)
        try:
            self.handler(h)
        finally:
            with self.lock:
                self.open -= 1


def _healthz_latencies(base: str, seconds: float) -> list[float]:
    took, stop = [], time.monotonic() + seconds
    while time.monotonic() < stop:
        started = time.monotonic()
        answer = httpx.get(
            f"{base}/healthz", headers={"Connection": "close"}, timeout=30, trust_env=False
        )
        took.append(time.monotonic() - started)
        assert answer.status_code == 200, answer.text
        time.sleep(0.1)
    return took


def test_a_trickling_robots_txt_holds_neither_the_workers_nor_the_site(serve, site: PageServer):
    robots = Crowd(trickle(interval=0.2, seconds=30))
    site.routes["/robots.txt"] = robots
    with serve([site], ATTEST_TRIAL_CALLS_PER_DAY="1000") as base, ThreadPoolExecutor(8) as pool:
        attack = [pool.submit(_quote, base, site.url(f"/page-{i}")) for i in range(ATTACKERS)]
        time.sleep(0.5)  # the attack's requests are in the workers' hands
        latencies = _healthz_latencies(base, seconds=4.0)
        answers = [future.result() for future in attack]
    # /healthz kept answering at once while the attack ran.
    assert max(latencies) < 1.0, latencies
    # The site saw one robots.txt fetch at a time, and only one in all: its answer (a
    # timeout, so disallowed for a while) served every other check.
    assert (robots.most, robots.total) == (1, 1)
    codes = sorted({(a.status_code, a.json()["error"]["code"]) for a in answers})
    assert codes == [(403, "robots_disallowed"), (429, "rate_limited")], codes
    busy = [a for a in answers if a.status_code == 429]
    assert {_reason(a) for a in busy} == {"unpaid_in_flight"}
    assert all(int(a.headers["Retry-After"]) > 0 for a in busy)
    assert "/page-0" not in site.paths()


ATTACKERS = 6


# --- 5: politeness per origin ---------------------------------------------------------------

HOST_BUDGET = 4
CALLS = 10


def test_one_site_is_fetched_within_its_budget_however_many_calls_ask(serve, site: PageServer):
    limits = {"ATTEST_HOST_RATE": f"{HOST_BUDGET}/h", "ATTEST_TRIAL_CALLS_PER_DAY": "1000"}
    with serve([site], **limits) as base:
        answers = [_quote(base, site.url(f"/article?n={i}")) for i in range(CALLS)]
    statuses = [a.status_code for a in answers]
    assert statuses == [200] * HOST_BUDGET + [429] * (CALLS - HOST_BUDGET), statuses
    # Counted at the site: the budget's worth of page fetches, whichever worker answered.
    assert sum(path.startswith("/article") for path in site.paths()) == HOST_BUDGET
    refused = answers[-1]
    error = refused.json()["error"]
    assert (error["code"], error["details"]["reason"]) == ("rate_limited", "host_rate_limited")
    assert error["details"]["host"] == f"127.0.0.1:{site.port}"
    assert 0 < int(refused.headers["Retry-After"]) <= 3600
