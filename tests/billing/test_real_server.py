"""Billing under a real gunicorn started with ``make run``'s limits, on loopback.

A worker killed with SIGKILL mid-work or mid-settle never costs a paid answer: a real
facilitator server settles, the test kills the worker at each stage, then retries the
same request with the same payment as a client would. And a payment header as large as
billing accepts (16 KiB) reaches the app instead of gunicorn's own refusal.
"""

from __future__ import annotations

import base64
import json
import threading
import time

import httpx
import pytest
from x402.http import decode_payment_required_header, decode_payment_response_header

from billing.core.payment_header import MAX_PAYMENT_HEADER_CHARS
from billing.pricing import PRICED_ROUTES
from billing.services.claims import SETTLE_LEASE_MARGIN_SECONDS
from tests.billing.conftest import NETWORK, PAY_TO, Payer
from tests.billing.facilitator_server import FacilitatorServer
from tests.billing.gunicorn_server import GunicornServer, makefile_gunicorn_limits

pytestmark = [pytest.mark.django_db(transaction=True)]

# Long enough that the settle lease (billing.services.claims.settle_lease_end) outlasts a
# server start under heavy load: the test waits for the new worker inside the lease, then
# ends the lease itself (time passing) instead of sleeping through it.
FACILITATOR_TIMEOUT = 60
SETTLE_LEASE_SECONDS = 2 * FACILITATOR_TIMEOUT + SETTLE_LEASE_MARGIN_SECONDS


@pytest.fixture(scope="module")
def facilitator():
    with FacilitatorServer(NETWORK) as server:
        yield server


@pytest.fixture(scope="module")
def server(django_db_setup, django_db_blocker, facilitator, tmp_path_factory):
    with django_db_blocker.unblock():
        gunicorn = GunicornServer(
            tmp_path_factory.mktemp("crash"),
            env={
                "X402_FACILITATOR_URL": facilitator.url,
                "X402_FACILITATOR_TIMEOUT": str(FACILITATOR_TIMEOUT),
                "X402_NETWORK": NETWORK,
                "X402_PAY_TO": PAY_TO,
                "ATTEST_TRIAL_CALLS_PER_DAY": "0",
                "ATTEST_UNPAID_RATE": "100000/m",
            },
            limits=makefile_gunicorn_limits(),
        )
    yield gunicorn
    gunicorn.stop()


@pytest.fixture(autouse=True)
def healthy(facilitator):
    facilitator.settle_mode = "ok"
    facilitator._released.clear()
    yield
    facilitator.release()


BODY = {"outcome": "hold"}


def _post(server, *, payment: str | None, request_id: str, timeout: float = 30):
    headers = {"X-Request-ID": request_id}
    if payment:
        headers["PAYMENT-SIGNATURE"] = payment
    return httpx.post(
        f"{server.url}/v1/test/verify/quote", json=BODY, headers=headers, timeout=timeout
    )


def _pay(server, payer: Payer) -> str:
    offered = _post(server, payment=None, request_id="offer")
    assert offered.status_code == 402
    return payer.pay(decode_payment_required_header(offered.headers["PAYMENT-REQUIRED"]))


def _ledger(server, payer: Payer) -> dict:
    return httpx.get(f"{server.url}/test-ledger/{payer.address}", timeout=10).json()


def _in_background(send) -> threading.Thread:
    """Send a request whose worker will die: it ends in a dropped connection."""
    outcome: dict = {}

    def run() -> None:
        try:
            outcome["response"] = send()
        except httpx.HTTPError as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.outcome = outcome  # type: ignore[attr-defined]
    thread.start()
    return thread


def _wait_for(check, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


class Lease:
    """The time left of a lease the server starts after ``Lease(seconds)`` is made.

    Every wait while the lease must still run is given ``left()``: a machine too slow to
    get there in time fails on a timeout, never on an answer that raced the lease's end.
    """

    def __init__(self, seconds: int) -> None:
        self.seconds = seconds
        self.started = time.monotonic()

    def left(self) -> float:
        left = self.started + self.seconds - time.monotonic()
        assert left > 0, f"the {self.seconds} s lease may have ended: the machine is too slow"
        return left

    def end(self, server, payer: Payer) -> None:
        """Time passing: the server's leases of ``payer``'s claims in flight end now."""
        httpx.post(f"{server.url}/test-ledger/{payer.address}/end-leases", timeout=10)


def _assert_no_pay_again(response) -> None:
    assert response.status_code == 503, response.text
    assert response.json()["error"]["code"] == "settlement_pending"
    assert "PAYMENT-REQUIRED" not in response.headers
    assert int(response.headers["Retry-After"]) >= 1


def test_worker_killed_mid_work_frees_the_payment_once_its_lease_ends(server, facilitator):
    payer = Payer()
    payment = _pay(server, payer)
    lease = Lease(PRICED_ROUTES["verify/quote"].work_seconds)
    doomed = _in_background(lambda: _post(server, payment=payment, request_id="hold-doomed"))
    _wait_for(
        lambda: [c["state"] for c in _ledger(server, payer)["claims"]] == ["claimed"],
        timeout=lease.left(),
    )
    server.kill_worker(timeout=lease.left())
    doomed.join(lease.left())
    assert "error" in doomed.outcome  # the caller lost its connection, and no answer

    # The lease still runs: the retry is told to wait, never to pay again.
    retry = _post(server, payment=payment, request_id="retry-early", timeout=lease.left())
    lease.left()  # answered before the lease could end
    _assert_no_pay_again(retry)
    assert retry.json()["error"]["details"]["reason"] == "work_in_progress"
    assert facilitator.landed == 0

    # The lease runs out (a route's work time): no money moved, so the claim is freed and
    # the retry's own work is served and settled, once.
    lease.end(server, payer)
    served = _post(server, payment=payment, request_id="retry")
    assert served.status_code == 200, served.text
    assert served.json()["work_request_id"] == "retry"
    assert decode_payment_response_header(served.headers["PAYMENT-RESPONSE"]).success
    assert facilitator.landed == 1
    ledger = _ledger(server, payer)
    assert [(c["state"], c["outcome"]) for c in ledger["claims"]] == [
        ("released", "abandoned_mid_work"),
        ("settled", "charged"),
    ]


@pytest.mark.parametrize(
    ("mode", "landed_before_kill"),
    [("land_then_hang", 1), ("hang", 0)],
    ids=["landed", "not_landed"],
)
def test_worker_killed_mid_settle_is_reconciled_and_the_answer_served(
    server, facilitator, mode, landed_before_kill
):
    payer = Payer()
    payment = _pay(server, payer)
    already = facilitator.landed
    facilitator.settle_mode = mode
    calls = len(facilitator.calls)
    lease = Lease(SETTLE_LEASE_SECONDS)
    doomed = _in_background(lambda: _post(server, payment=payment, request_id="doomed"))
    # Kill while the worker waits on /settle (the transfer already landed, or not).
    _wait_for(lambda: "/settle" in facilitator.calls[calls:], timeout=lease.left())
    _wait_for(lambda: facilitator.landed == already + landed_before_kill, timeout=lease.left())
    server.kill_worker(timeout=lease.left())
    doomed.join(lease.left())
    assert "error" in doomed.outcome
    facilitator.release()
    facilitator.settle_mode = "ok"
    assert [c["state"] for c in _ledger(server, payer)["claims"]] == ["settling"]

    # Money may have moved: until the settling worker's lease ends, wait; never pay again.
    early = _post(server, payment=payment, request_id="retry-early", timeout=lease.left())
    waited = lease.seconds - lease.left()  # answered before the lease could end
    _assert_no_pay_again(early)
    assert early.json()["error"]["details"]["reason"] == "settlement_pending"
    # Retry-After is what is left of the lease the server started after the test's clock.
    assert lease.seconds - waited - 1 <= int(early.headers["Retry-After"]) <= lease.seconds

    # Once the lease ends, the retry reconciles with the facilitator and gets the dead
    # worker's answer.
    lease.end(server, payer)
    served = _post(server, payment=payment, request_id="retry")
    assert served.status_code == 200, served.text
    assert served.json()["work_request_id"] == "doomed"  # the stored answer, not new work
    assert decode_payment_response_header(served.headers["PAYMENT-RESPONSE"]).success
    assert facilitator.landed == already + 1  # charged exactly once
    ledger = _ledger(server, payer)
    assert [(c["state"], c["outcome"]) for c in ledger["claims"]] == [("settled", "charged")]
    # And the same bytes again for a client that lost this answer too.
    assert _post(server, payment=payment, request_id="again").content == served.content


def _padded(payment: str, length: int) -> str:
    """The same payment, its JSON padded (an extensions entry) to ``length`` characters."""
    data = json.loads(base64.b64decode(payment))
    data["extensions"] = {"padding": ""}
    bare = len(base64.b64encode(json.dumps(data).encode()))
    data["extensions"]["padding"] = "x" * ((length - bare) * 3 // 4)
    header = base64.b64encode(json.dumps(data).encode()).decode()
    while len(header) < length:  # base64 rounds to 4: pad up to the exact length
        data["extensions"]["padding"] += "x"
        header = base64.b64encode(json.dumps(data).encode()).decode()
    return header


def test_a_payment_header_of_the_full_16_kib_is_paid_through_gunicorn(server, facilitator):
    payer = Payer()
    header = _padded(_pay(server, payer), MAX_PAYMENT_HEADER_CHARS - 4)
    assert MAX_PAYMENT_HEADER_CHARS - 4 <= len(header) <= MAX_PAYMENT_HEADER_CHARS
    assert len(header) > 8190  # gunicorn's default field limit would refuse it
    response = _post(server, payment=header, request_id="large-header")
    assert response.status_code == 200, response.text
    assert decode_payment_response_header(response.headers["PAYMENT-RESPONSE"]).success


def test_a_payment_header_over_16_kib_is_the_apps_json_refusal(server):
    payer = Payer()
    header = _padded(_pay(server, payer), MAX_PAYMENT_HEADER_CHARS + 1)
    response = _post(server, payment=header, request_id="too-large-header")
    assert response.status_code == 402
    assert response.json()["error"]["details"]["reason"] == "malformed_payment"
