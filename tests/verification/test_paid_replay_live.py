"""A payment buys bounded work even when nothing is charged: against a real gunicorn.

A refusal met after the payment is verified (here 503 ``pdf_queue_full``) releases the
claim and costs nothing, so without a bound one authorization replayed on a 10-PDF batch
made the server fetch ten pages per replay, for ever, and many authorizations did the
same. The page server counts the fetches: one authorization pays for at most
``UNCHARGED_RUNS_PER_AUTHORIZATION`` runs, and one caller's paid batches refused so keep
their places in its bucket of uncharged failed batches (6, one back every 10 s).
"""

from __future__ import annotations

import subprocess
import sys
import time

import httpx
import pytest
from x402.http import decode_payment_required_header

from billing.models import LocalTransfer
from billing.services.claims import UNCHARGED_RUNS_PER_AUTHORIZATION
from tests.billing.conftest import NETWORK, PAY_TO, Payer
from tests.live_service import ROOT, gunicorn, migrate, server_env, shared_database
from tests.verification.conftest import PageServer, page
from tests.verification.pdfs import text_pdf
from verification.capacity.queues import UNCHARGED_FAILURES

pytestmark = [pytest.mark.django_db(transaction=True)]

PDFS = 10
REPLAYS = 12


@pytest.fixture
def server_env_for(pages: PageServer, signing_keys: str, tmp_path):
    database_url, needs_migrate = shared_database(tmp_path)
    env = server_env(
        DATABASE_URL=database_url,
        SECRET_KEY="paid-replay-test",
        ATTEST_VAR_DIR=str(tmp_path),
        ATTEST_SIGNING_KEYS=signing_keys,
        ATTEST_FETCH_ALLOW=f"127.0.0.1:{pages.port}",
        ATTEST_TRIAL_CALLS_PER_DAY="0",
        ATTEST_UNPAID_RATE="100000/m",
        ATTEST_PDF_READERS="1",
        ATTEST_PDF_QUEUE="1",
        X402_NETWORK=NETWORK,
        X402_PAY_TO=PAY_TO,
        X402_FACILITATOR_URL="",
    )
    if needs_migrate:
        migrate(env)
    return env


def _fill_pdf_queue(env: dict[str, str]) -> None:
    """Take every place of the server's PDF queue from another process, as other callers'
    PDFs would: the places stay held until their lease (minutes) ends."""
    code = (
        "import django; django.setup()\n"
        "from verification.capacity.pdf_pool import PDF_QUEUE\n"
        "sizes = PDF_QUEUE.sizes()\n"
        "PDF_QUEUE.join(sizes.running + sizes.waiting)\n"
        "assert not PDF_QUEUE.has_room()\n"
    )
    subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**env, "DJANGO_SETTINGS_MODULE": "attest.settings"},
        check=True,
        timeout=120,
    )


def _pdf_batch(pages: PageServer) -> dict:
    citations = []
    for n in range(PDFS):
        pages.routes[f"/r{n}.pdf"] = page(
            text_pdf([[f"Report {n} opens here."]]), content_type="application/pdf"
        )
        citations.append({"url": pages.url(f"/r{n}.pdf"), "quote": f"Report {n} opens"})
    return {"citations": citations}


def _pdf_fetches(pages: PageServer) -> int:
    return sum(1 for path in pages.paths() if path.endswith(".pdf"))


def test_one_authorization_replayed_on_a_refused_batch_buys_bounded_fetches(server_env_for, pages):
    body = _pdf_batch(pages)
    payer = Payer()
    with (
        gunicorn(server_env_for, workers=2, threads=4) as base,
        httpx.Client(base_url=base, timeout=60, trust_env=False) as http,
    ):
        offer_answer = http.post("/v1/verify/citations", json=body)
        assert offer_answer.status_code == 402, offer_answer.text
        offer = decode_payment_required_header(offer_answer.headers["PAYMENT-REQUIRED"])
        _fill_pdf_queue(server_env_for)
        pages.seen.clear()

        # One authorization, replayed: each run fetches the ten PDFs, then meets the full
        # PDF queue after the payment was verified (503, not charged).
        payment = payer.pay(offer)
        begun = time.monotonic()
        answers = [
            http.post("/v1/verify/citations", json=body, headers={"PAYMENT-SIGNATURE": payment})
            for _ in range(REPLAYS)
        ]
        took = time.monotonic() - begun
        runs = UNCHARGED_RUNS_PER_AUTHORIZATION
        fetched = _pdf_fetches(pages)
        assert fetched <= runs * PDFS, (
            f"{fetched} page fetches for one authorization replayed {REPLAYS} times in {took:.1f} s"
        )
        reasons = [a.json()["error"]["details"].get("reason") for a in answers]
        assert reasons[:runs] == ["pdf_queue_full"] * runs, reasons
        assert all(a.headers["Retry-After"] == "5" for a in answers[:runs])
        # Then the authorization has bought all it may: 402, sign a new one, nothing fetched.
        assert [a.status_code for a in answers[runs:]] == [402] * (REPLAYS - runs), reasons
        assert set(reasons[runs:]) == {"payment_retries_used"}
        assert _pdf_fetches(pages) == fetched  # bound: 3 runs x 10 pages = 30, not 120

        # Fresh authorizations, one per call: the caller's bucket of uncharged failed
        # batches bounds them (six places, one back every 10 s; the three runs above hold
        # three of them).
        pages.seen.clear()
        started = time.monotonic()
        fresh = [
            http.post(
                "/v1/verify/citations", json=body, headers={"PAYMENT-SIGNATURE": payer.pay(offer)}
            )
            for _ in range(REPLAYS)
        ]
        elapsed = time.monotonic() - started
    statuses = [a.status_code for a in fresh]
    refill = int(elapsed // UNCHARGED_FAILURES.refill_seconds) + 1
    bucket_runs = UNCHARGED_FAILURES.size - runs + refill
    assert statuses.count(503) <= bucket_runs, statuses
    assert statuses.count(429) >= REPLAYS - bucket_runs, statuses
    limited = [a.json()["error"]["details"]["reason"] for a in fresh if a.status_code == 429]
    assert set(limited) == {"uncharged_failures"}
    assert _pdf_fetches(pages) <= bucket_runs * PDFS
    if server_env_for["DATABASE_URL"].startswith("postgres"):  # the server's ledger is ours
        assert not LocalTransfer.objects.exists()  # every refusal is free


SINGLE_CALLS = 16


def test_a_fresh_authorization_for_each_refused_single_call_buys_bounded_fetches(
    server_env_for, pages
):
    # verify/quote and fetch on a PDF while the PDF queue is full: each call fetches the
    # page, then is refused after its payment verified (503, not charged). A fresh
    # authorization per call used to buy a fetch every time; now each refusal uses one of
    # the caller's uncharged-failure places, the batches' bucket.
    pages.routes["/one.pdf"] = page(
        text_pdf([["One report opens here."]]), content_type="application/pdf"
    )
    url = pages.url("/one.pdf")
    bodies = {
        "/v1/verify/quote": {"url": url, "quote": "One report opens"},
        "/v1/fetch": {"url": url},
    }
    payer = Payer()
    with (
        gunicorn(server_env_for, workers=2, threads=4) as base,
        httpx.Client(base_url=base, timeout=60, trust_env=False) as http,
    ):
        offers = {}
        for path, body in bodies.items():
            offer_answer = http.post(path, json=body)
            assert offer_answer.status_code == 402, offer_answer.text
            offers[path] = decode_payment_required_header(offer_answer.headers["PAYMENT-REQUIRED"])
        _fill_pdf_queue(server_env_for)
        pages.seen.clear()
        started = time.monotonic()
        answers = []
        for n in range(SINGLE_CALLS):
            path = list(bodies)[n % 2]
            answers.append(
                http.post(
                    path,
                    json=bodies[path],
                    headers={"PAYMENT-SIGNATURE": payer.pay(offers[path])},
                )
            )
        elapsed = time.monotonic() - started
    statuses = [a.status_code for a in answers]
    reasons = [a.json()["error"]["details"].get("reason") for a in answers]
    places = UNCHARGED_FAILURES.size + int(elapsed // UNCHARGED_FAILURES.refill_seconds) + 1
    assert set(reasons[: UNCHARGED_FAILURES.size]) == {"pdf_queue_full"}, reasons
    assert statuses.count(503) <= places, reasons
    assert statuses.count(429) >= SINGLE_CALLS - places, reasons
    assert {r for a, r in zip(answers, reasons, strict=True) if a.status_code == 429} == {
        "uncharged_failures"
    }
    # Counted at the page server: one fetch per refused call, and none once refused first.
    assert _pdf_fetches(pages) == statuses.count(503), (pages.paths(), statuses)
    if server_env_for["DATABASE_URL"].startswith("postgres"):
        assert not LocalTransfer.objects.exists()
