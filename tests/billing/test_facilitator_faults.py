"""Every way settlement can fail, against a real facilitator server on loopback.

For each fault the first answer and then a retry of the same request with the same payment
(the facilitator healthy again) are checked against the three rules: no paid answer
without a settlement, no settlement without the answer being obtainable by a retry, and
never "pay again" (a 402 offer) while money may have moved.
"""

from __future__ import annotations

import pytest
from x402.http import decode_payment_response_header

from billing.models import PaidAnswer, PaymentClaim
from tests.billing.conftest import NETWORK, post
from tests.billing.facilitator_server import FacilitatorServer

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.billing.urls")]

# mode: (first status, first code, money moved by the first attempt, work redone on retry)
FAULTS = {
    "down_after_verify": (503, "facilitator_unavailable", False, True),
    "refused_by_chain": (402, "payment_required", False, True),
    "hang": (503, "settlement_pending", False, False),
    "error_500": (503, "settlement_pending", False, False),
    "close": (503, "settlement_pending", False, False),
    "land_then_hang": (503, "settlement_pending", True, False),
    "land_then_500": (503, "settlement_pending", True, False),
    "land_then_close": (503, "settlement_pending", True, False),
}


@pytest.mark.parametrize("fault", list(FAULTS))
def test_a_settlement_fault_never_loses_a_paid_answer(api, payer, offer, settings, fault):
    status, code, moved, redone = FAULTS[fault]
    settings.X402_FACILITATOR_TIMEOUT = 1
    mode = "ok" if fault == "refused_by_chain" else fault
    revert = "ERC20: transfer amount exceeds balance" if fault == "refused_by_chain" else None
    payment = payer.pay(offer())
    with FacilitatorServer(NETWORK, settle_mode=mode, settle_revert=revert) as facilitator:
        settings.X402_FACILITATOR_URL = facilitator.url
        first = post(api, payment=payment, request_id="first-attempt")
        facilitator.release()
        landed = facilitator.landed
        chain = facilitator.chain
    assert (first.status_code, first.json()["error"]["code"]) == (status, code)
    assert landed == (1 if moved else 0)
    assert "page" not in first.json()  # the work's answer did not leave unpaid
    if status == 503:
        assert first["Retry-After"]
    if code == "settlement_pending":
        # Money may have moved: the claim and the answer wait; no offer to pay again.
        assert "PAYMENT-REQUIRED" not in first
        claim = PaymentClaim.objects.get()
        assert claim.state == "pending"
        assert PaidAnswer.objects.filter(claim=claim).exists()
    else:
        # Nothing was sent, or the chain refused it: nothing moved, the payment is free.
        assert PaymentClaim.objects.get().state == "released"
        assert not PaidAnswer.objects.exists()

    # The facilitator is healthy again (the same chain: what landed stays landed).
    with FacilitatorServer(NETWORK) as healthy:
        healthy.chain = chain
        healthy.facilitator = _facilitator_over(chain)
        settings.X402_FACILITATOR_URL = healthy.url
        retry = post(api, payment=payment)
        assert retry.status_code == 200, retry.content
        assert decode_payment_response_header(retry["PAYMENT-RESPONSE"]).success
        assert healthy.landed == 1  # paid exactly once, whatever happened before
        expected = "first-attempt" if not redone else retry["X-Request-ID"]
        assert retry.json()["work_request_id"] == expected
        # Asked once more, the same request gets the same bytes, charged once.
        assert post(api, payment=payment).content == retry.content
        assert healthy.landed == 1
    assert PaymentClaim.objects.filter(state="settled").count() == 1


def _facilitator_over(chain):
    from x402 import x402FacilitatorSync
    from x402.mechanisms.evm.exact import ExactEvmFacilitatorScheme

    return x402FacilitatorSync().register([NETWORK], ExactEvmFacilitatorScheme(chain))


def test_a_facilitator_that_never_answers_leaves_the_claim_pending_not_released(
    api, payer, offer, settings
):
    settings.X402_FACILITATOR_TIMEOUT = 1
    payment = payer.pay(offer())
    with FacilitatorServer(NETWORK, settle_mode="hang") as facilitator:
        settings.X402_FACILITATOR_URL = facilitator.url
        assert post(api, payment=payment).status_code == 503
        # Still no answer on the retry: the same 503, never an offer.
        retry = post(api, payment=payment)
        facilitator.release()
    assert (retry.status_code, retry.json()["error"]["code"]) == (503, "settlement_pending")
    assert "PAYMENT-REQUIRED" not in retry
    assert PaymentClaim.objects.get().state == "pending"
