"""The HTTP facilitator path: a real facilitator server on loopback, up, down and slow."""

from __future__ import annotations

import socket
import time

import pytest
from x402.http import decode_payment_response_header

from billing.models import PaymentClaim, Refusal, Settlement
from tests.billing.conftest import NETWORK, post
from tests.billing.facilitator_server import FacilitatorServer

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.billing.urls")]


def _closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def test_payment_is_verified_and_settled_by_the_http_facilitator(api, payer, offer, settings):
    with FacilitatorServer(NETWORK) as facilitator:
        settings.X402_FACILITATOR_URL = facilitator.url
        response = post(api, payment=payer.pay(offer()))
        assert response.status_code == 200, response.content
        settled = decode_payment_response_header(response["PAYMENT-RESPONSE"])
        assert settled.success
        assert settled.transaction in facilitator.chain._transfers
        assert facilitator.calls == ["/supported", "/verify", "/settle"]
        assert Settlement.objects.get().facilitator == facilitator.url


def test_uncharged_outcome_never_reaches_settle(api, payer, offer, settings):
    with FacilitatorServer(NETWORK) as facilitator:
        settings.X402_FACILITATOR_URL = facilitator.url
        assert post(api, outcome="host_not_found", payment=payer.pay(offer())).status_code == 422
        assert "/settle" not in facilitator.calls
        assert facilitator.chain._transfers == {}


def test_facilitator_down_is_a_clear_503_and_nothing_is_charged(api, payer, offer, settings):
    payment = payer.pay(offer())  # signed against the local facilitator's identical offer
    settings.X402_FACILITATOR_URL = _closed_port_url()
    response = post(api, payment=payment)
    assert response.status_code == 503
    error = response.json()["error"]
    assert error["code"] == "facilitator_unavailable"
    assert "nothing was charged" in error["message"]
    assert response["Retry-After"]
    assert "PAYMENT-REQUIRED" not in response
    assert not PaymentClaim.objects.exists()
    # The authorization was never used: it pays once a facilitator answers.
    settings.X402_FACILITATOR_URL = ""
    assert post(api, payment=payment).status_code == 200


def test_settle_timeout_answers_pending_never_pay_again(api, payer, offer, settings):
    settings.X402_FACILITATOR_TIMEOUT = 1
    with FacilitatorServer(NETWORK, settle_delay=2.5) as facilitator:
        settings.X402_FACILITATOR_URL = facilitator.url
        payment = payer.pay(offer())
        response = post(api, payment=payment)
        assert response.status_code == 503
        error = response.json()["error"]
        assert error["code"] == "settlement_pending"
        assert "Do not pay again" in error["message"]
        assert "PAYMENT-REQUIRED" not in response
        assert "accepts" not in error["details"]
        claim = PaymentClaim.objects.get()
        assert claim.state == "pending"
        # While the facilitator still gives no answer, a retry is told the same, not offered
        # a new payment.
        retry = post(api, payment=payment)
        assert retry.status_code == 503
        assert retry.json()["error"]["code"] == "settlement_pending"
        assert "PAYMENT-REQUIRED" not in retry
        assert PaymentClaim.objects.get().state == "pending"


def test_retry_after_a_pending_settlement_is_served_once_it_landed(api, payer, offer, settings):
    settings.X402_FACILITATOR_TIMEOUT = 1
    with FacilitatorServer(NETWORK, settle_delay=2) as facilitator:
        settings.X402_FACILITATOR_URL = facilitator.url
        payment = payer.pay(offer())
        first = post(api, payment=payment, request_id="first-call")
        assert first.json()["error"]["code"] == "settlement_pending"
        # The slow settlement goes through on the facilitator after we stopped waiting.
        deadline = time.monotonic() + 10
        while not facilitator.chain._transfers and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(facilitator.chain._transfers) == 1
        facilitator.settle_delay = 0
        retry = post(api, payment=payment)
        assert retry.status_code == 200, retry.content
        body = retry.json()
        assert body["tier"] == "paid"
        # The answer the first request's work produced, kept while settlement was unsure.
        assert body["work_request_id"] == "first-call"
        assert decode_payment_response_header(retry["PAYMENT-RESPONSE"]).success
        assert len(facilitator.chain._transfers) == 1  # paid once, served once
        claim = PaymentClaim.objects.get()
        assert (claim.state, claim.outcome) == ("settled", "charged")
        # Asked again, the same request gets the same bytes; another request is refused.
        assert post(api, payment=payment).content == retry.content
        other = post(api, outcome="http_404", payment=payment)
        assert other.json()["error"]["details"]["reason"] == "payment_already_used"


def test_settlement_refused_by_the_chain_withholds_the_answer_and_frees_the_claim(
    api, payer, offer, settings
):
    with FacilitatorServer(
        NETWORK, settle_revert="ERC20: transfer amount exceeds balance"
    ) as facilitator:
        settings.X402_FACILITATOR_URL = facilitator.url
        response = post(api, payment=payer.pay(offer()))
        assert response.status_code == 402
        error = response.json()["error"]
        assert error["details"]["reason"] == "invalid_exact_evm_insufficient_balance"
        assert "nothing was charged" in error["message"]
        assert "page" not in response.json()  # the work's answer never left
        claim = PaymentClaim.objects.get()
        assert claim.state == "released"
        assert claim.outcome == "settle_refused:invalid_exact_evm_insufficient_balance"
        assert Settlement.objects.get().success is False


def test_a_long_refusal_reason_from_the_facilitator_is_a_402_not_a_server_error(
    api, payer, offer, settings
):
    reason = "invalid_" + "very_long_explanation_" * 20
    with FacilitatorServer(NETWORK, verify_invalid_reason=reason) as facilitator:
        settings.X402_FACILITATOR_URL = facilitator.url
        response = post(api, payment=payer.pay(offer()))
    assert response.status_code == 402, response.content
    told = response.json()["error"]["details"]["reason"]
    assert told.startswith("invalid_very_long_explanation_") and reason.startswith(told)
    assert Refusal.objects.get().reason == told
    assert not PaymentClaim.objects.exists()


def test_a_long_transaction_id_from_the_facilitator_is_recorded_whole(api, payer, offer, settings):
    transaction = "0x" + "ab" * 150  # longer than any chain's hash; must not become a 500
    with FacilitatorServer(NETWORK, settle_transaction=transaction) as facilitator:
        settings.X402_FACILITATOR_URL = facilitator.url
        response = post(api, payment=payer.pay(offer()))
    assert response.status_code == 200, response.content
    assert decode_payment_response_header(response["PAYMENT-RESPONSE"]).transaction == transaction
    assert Settlement.objects.get().transaction == transaction
