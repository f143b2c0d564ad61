"""Capacity is shared: load on server A makes server B refuse, through one database and Redis.

Two gunicorn servers run on the test database (and, when the suite runs with Redis,
on its Redis DB; otherwise on the database store). Nothing but the shared store
links them.
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from django.conf import settings

from tests.live_service import gunicorn, server_env, shared_database
from tests.verification.conftest import PageServer, page, send
from tests.verification.pdfs import text_pdf

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


@pytest.fixture(params=["redis", "database"])
def store(request) -> str:
    if request.param == "redis" and "redis" not in settings.CACHES["default"]["LOCATION"]:
        pytest.skip("needs CACHE_URL=redis://...")
    return request.param


@pytest.fixture
def servers(store, pages: PageServer, signing_keys: str, tmp_path):
    """Start servers A and B with the given capacity settings: ``with servers(...) as (a, b)``."""

    @contextlib.contextmanager
    def start(**sizes: str):
        database_url, _ = shared_database(tmp_path)
        env = server_env(
            DATABASE_URL=database_url,
            SECRET_KEY="two-instances-test",
            ATTEST_SIGNING_KEYS=signing_keys,
            ATTEST_FETCH_ALLOW=f"127.0.0.1:{pages.port}",
            ATTEST_TRIAL_CALLS_PER_DAY="1000000",
            # The load stands for many callers but comes from one address: its checks before
            # the offer may all run at once (tests/verification/test_unpaid_attacks.py holds
            # one caller to the default).
            ATTEST_UNPAID_IN_FLIGHT="100",
            **sizes,
        )
        if store == "redis":
            env["CACHE_URL"] = settings.CACHES["default"]["LOCATION"]
        # Each on a port the system picks: never a fixed one another run may hold.
        with gunicorn(env) as a, gunicorn(env) as b:
            yield a, b

    return start


def _citations(base: str, citations: list[dict]) -> httpx.Response:
    return httpx.post(
        f"{base}/v1/verify/citations", json={"citations": citations}, timeout=60, trust_env=False
    )


def _until(refused, send_one, seconds: float = 30.0) -> httpx.Response | None:
    """Send from B until a response satisfies ``refused``, or give up after ``seconds``."""
    stop = time.monotonic() + seconds
    while time.monotonic() < stop:
        response = send_one()
        if refused(response):
            return response
    return None


def _load(target, clients: int, stop: threading.Event) -> ThreadPoolExecutor:
    def loop() -> None:
        while not stop.is_set():
            target()

    pool = ThreadPoolExecutor(clients)
    for _ in range(clients):
        pool.submit(loop)
    return pool


def _reason(response: httpx.Response) -> str | None:
    return response.json().get("error", {}).get("details", {}).get("reason")


def test_load_on_server_a_makes_server_b_refuse(servers, pages):
    with servers(
        ATTEST_MATCH_SLOTS="1",
        ATTEST_MATCH_QUEUE="0",
        ATTEST_PDF_READERS="1",
        ATTEST_PDF_QUEUE="0",
    ) as (a, b):
        _six_running_on_a_then_b(a, b, pages)
        _heavy_matching_on_a_then_b(a, b, pages)
        _heavy_pdfs_on_a_then_b(a, b, pages)


def _six_running_on_a_then_b(a: str, b: str, pages: PageServer) -> None:
    release = threading.Event()

    def held(h) -> None:
        release.wait(20)
        send(h, 200, b"<p>a slow page</p>")

    pages.routes["/slow"] = held
    pages.routes["/fast"] = page("<p>a fast page</p>")
    fast = [{"url": pages.url("/fast"), "quote": "fast page"}]
    assert _citations(b, fast).status_code == 200
    with ThreadPoolExecutor(6) as pool:
        running = [
            pool.submit(_citations, a, [{"url": pages.url("/slow"), "quote": "slow"}])
            for _ in range(6)
        ]
        deadline = time.monotonic() + 20
        while pages.paths().count("/slow") < 6 and time.monotonic() < deadline:
            time.sleep(0.05)
        refused = _citations(b, fast)
        release.set()
        # One match slot: some of the six may meet a full match queue; neither outcome
        # keeps a place (only a batch whose every citation failed does).
        assert {f.result().status_code for f in running} <= {200, 503}
    assert refused.status_code == 429
    assert _reason(refused) == "uncharged_failures"
    assert int(refused.headers["Retry-After"]) >= 1
    assert _citations(b, fast).status_code == 200  # the six gave their places back


def _heavy_matching_on_a_then_b(a: str, b: str, pages: PageServer) -> None:
    rng = random.Random(3)
    words = ("harbour", "board", "survey", "nitrate", "sample", "water", "report", "quarter")

    def prose(count: int) -> str:
        return " ".join(rng.choice(words) for _ in range(count))

    pages.routes["/big"] = page(f"<p>{prose(300_000)}</p>")  # about 2 MB
    pages.routes["/small"] = page("<p>a small page</p>")
    # Quotes in the page's own words: the fuzzy search cannot rule much of the page out, so
    # each takes a while; three (a trial batch's most) keep A matching for a few seconds.
    heavy = [{"url": pages.url("/big"), "quote": prose(120)[:1000]} for _ in range(3)]
    small = [{"url": pages.url("/small"), "quote": "small page"}]
    assert _citations(b, small).status_code == 200
    stop = threading.Event()
    pool = _load(lambda: _citations(a, heavy), clients=3, stop=stop)
    try:
        refused = _until(lambda r: r.status_code == 503, lambda: _citations(b, small))
    finally:
        stop.set()
        pool.shutdown(wait=True)
    assert refused is not None, "B never met the match queue A kept full"
    assert refused.json()["error"]["code"] == "over_capacity"
    assert _reason(refused) == "match_queue_full"
    assert refused.headers["Retry-After"] == "3"


def _heavy_pdfs_on_a_then_b(a: str, b: str, pages: PageServer) -> None:
    rng = random.Random(4)
    words = ["alpha", "beta", "gamma", "delta", "harbour", "nitrate", "survey", "water"]
    lines = [[" ".join(rng.choice(words) for _ in range(12)) for _ in range(40)]]
    pages.routes["/heavy.pdf"] = page(text_pdf(lines * 100), content_type="application/pdf")
    pages.routes["/light.pdf"] = page(text_pdf([["Light words."]]), content_type="application/pdf")

    def quote(base: str, path: str) -> httpx.Response:
        return httpx.post(
            f"{base}/v1/verify/quote",
            json={"url": pages.url(path), "quote": "words"},
            timeout=90,
            trust_env=False,
        )

    assert quote(b, "/light.pdf").status_code == 200
    stop = threading.Event()
    pool = _load(lambda: quote(a, "/heavy.pdf"), clients=2, stop=stop)
    try:
        refused = _until(lambda r: r.status_code == 503, lambda: quote(b, "/light.pdf"))
    finally:
        stop.set()
        pool.shutdown(wait=True)
    assert refused is not None, "B never met the PDF queue A kept full"
    assert _reason(refused) == "pdf_queue_full"
    assert refused.headers["Retry-After"] == "5"
