"""Paying with a real EIP-3009 signature through the built-in local facilitator."""

from __future__ import annotations

import time

import pytest
from x402.http import decode_payment_response_header

from billing.models import LocalTransfer, PaymentClaim, Refusal, Settlement
from billing.services.claims import UNCHARGED_RUNS_PER_AUTHORIZATION
from tests.billing.conftest import NETWORK, decode_offer, post

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.billing.urls")]


def test_valid_payment_is_served_and_settled(api, payer, offer):
    payment = payer.pay(offer())
    response = post(api, payment=payment)
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["tier"], body["rail"], body["network"]) == ("paid", "x402", NETWORK)
    assert body["seen_payer"] == payer.address.lower()
    settled = decode_payment_response_header(response["PAYMENT-RESPONSE"])
    assert settled.success is True
    assert settled.payer.lower() == payer.address.lower()
    assert settled.transaction.startswith("0x") and len(settled.transaction) == 66
    [transfer] = LocalTransfer.objects.all()
    assert transfer.transaction == settled.transaction
    assert transfer.value == "10000"
    claim = PaymentClaim.objects.get()
    assert (claim.state, claim.outcome) == ("settled", "charged")
    assert Settlement.objects.get().transaction == settled.transaction


def test_same_payment_for_another_call_is_refused(api, payer, offer):
    payment = payer.pay(offer())
    assert post(api, payment=payment).status_code == 200
    again = post(api, outcome="bot_wall", payment=payment)
    assert decode_offer(again)
    assert again.json()["error"]["details"]["reason"] == "payment_already_used"
    assert LocalTransfer.objects.count() == 1


@pytest.mark.parametrize(
    ("signed_changes", "reason"),
    [
        ({"amount": "9999"}, "invalid_exact_evm_payload_authorization_value_mismatch"),
        (
            {"pay_to": "0x2222222222222222222222222222222222222222"},
            "invalid_exact_evm_payload_recipient_mismatch",
        ),
        # Expired an hour ago: refused before the facilitator is even asked.
        ({"max_timeout_seconds": -3600}, "authorization_expires_too_soon"),
    ],
    ids=["wrong_amount", "wrong_payee", "expired"],
)
def test_payment_with_wrong_terms_is_refused_with_a_reason(
    api, payer, offer, signed_changes, reason
):
    payment = payer.pay_tampered(offer(), **signed_changes)
    response = post(api, payment=payment)
    decode_offer(response)
    assert response.json()["error"]["details"]["reason"] == reason
    refusal = Refusal.objects.get()
    assert (refusal.payer, refusal.reason, refusal.count) == (payer.address.lower(), reason, 1)
    assert not PaymentClaim.objects.exists()
    assert not LocalTransfer.objects.exists()


def test_bad_signature_is_refused(api, payer, offer):
    import base64
    import json

    payment = payer.pay(offer())
    payload = json.loads(base64.b64decode(payment))
    signature = payload["payload"]["signature"]
    payload["payload"]["signature"] = (
        signature[:-4] + ("00" if signature[-4:-2] != "00" else "11") + signature[-2:]
    )
    forged = base64.b64encode(json.dumps(payload).encode()).decode()
    response = post(api, payment=forged)
    decode_offer(response)
    assert response.json()["error"]["details"]["reason"] == "invalid_exact_evm_payload_signature"


def test_signature_by_another_key_is_refused(api, payer, offer):
    from tests.billing.conftest import Payer

    thief = Payer()
    payment = thief.pay_tampered(offer())
    import base64
    import json

    payload = json.loads(base64.b64decode(payment))
    payload["payload"]["authorization"]["from"] = payer.address
    forged = base64.b64encode(json.dumps(payload).encode()).decode()
    response = post(api, payment=forged)
    assert response.json()["error"]["details"]["reason"] == "invalid_exact_evm_payload_signature"


def test_authorization_expiring_before_the_work_could_finish_is_refused(api, payer, offer):
    payment = payer.pay_tampered(offer(), max_timeout_seconds=40)
    response = post(api, payment=payment)
    decode_offer(response)
    assert response.json()["error"]["details"]["reason"] == "authorization_expires_too_soon"


def test_payment_for_another_route_offer_does_not_match(api, payer, offer):
    cheap = payer.pay(offer("verify/quote"))
    response = post(api, "verify/citations", payment=cheap)
    decode_offer(response)
    assert response.json()["error"]["details"]["reason"] == "payment_mismatch"


def test_garbage_payment_header_is_refused(api):
    response = post(api, payment="not base64 at all!")
    decode_offer(response)
    assert response.json()["error"]["details"]["reason"] == "malformed_payment"


def test_bad_request_with_valid_payment_is_not_settled_and_payment_stays_usable(api, payer, offer):
    payment = payer.pay(offer())
    refused = api.post(
        "/v1/test/verify/quote",
        {"outcome": "nonsense"},
        format="json",
        HTTP_PAYMENT_SIGNATURE=payment,
    )
    assert refused.status_code == 400
    assert "PAYMENT-RESPONSE" not in refused
    assert not LocalTransfer.objects.exists()
    served = post(api, payment=payment)
    assert served.status_code == 200
    assert decode_payment_response_header(served["PAYMENT-RESPONSE"]).success


@pytest.mark.parametrize(
    ("outcome", "status"),
    [
        ("blocked", 403),
        ("robots_disallowed", 403),
        ("host_not_found", 422),
        ("match_too_costly", 422),
        ("rate_limited", 429),
        ("over_capacity", 503),
        ("not_on_edge", 501),
    ],
)
def test_uncharged_error_after_payment_releases_the_payment(api, payer, offer, outcome, status):
    payment = payer.pay(offer())
    refused = post(api, outcome=outcome, payment=payment)
    assert refused.status_code == status
    assert refused.json()["error"]["code"] == outcome
    assert "PAYMENT-RESPONSE" not in refused
    assert not LocalTransfer.objects.exists()
    claim = PaymentClaim.objects.get()
    assert (claim.state, claim.outcome) == ("released", outcome)
    assert post(api, payment=payment).status_code == 200
    assert LocalTransfer.objects.count() == 1


def test_server_error_after_payment_is_not_charged(api, payer, offer):
    api.raise_request_exception = False
    payment = payer.pay(offer())
    assert post(api, outcome="crash", payment=payment).status_code == 500
    assert not LocalTransfer.objects.exists()
    assert PaymentClaim.objects.get().state == "released"


@pytest.mark.parametrize("outcome", ["http_404", "bot_wall", "timeout"])
def test_page_results_are_charged_even_when_the_page_is_not_real(api, payer, offer, outcome):
    response = post(api, outcome=outcome, payment=payer.pay(offer()))
    assert response.status_code == 200
    assert decode_payment_response_header(response["PAYMENT-RESPONSE"]).success
    assert LocalTransfer.objects.count() == 1
    assert PaymentClaim.objects.get().state == "settled"


def test_v1_x_payment_header_is_accepted(api, payer, offer):
    import base64
    import json

    v2 = json.loads(base64.b64decode(payer.pay(offer())))
    v1 = {"x402Version": 1, "scheme": "exact", "network": "base-sepolia", "payload": v2["payload"]}
    header = base64.b64encode(json.dumps(v1).encode()).decode()
    response = api.post(
        "/v1/test/verify/quote", {"outcome": "real"}, format="json", HTTP_X_PAYMENT=header
    )
    assert response.status_code == 200, response.content
    assert decode_payment_response_header(response["PAYMENT-RESPONSE"]).success
    assert response["X-PAYMENT-RESPONSE"] == response["PAYMENT-RESPONSE"]


def test_v1_payment_for_another_network_is_refused(api, payer, offer):
    import base64
    import json

    v2 = json.loads(base64.b64decode(payer.pay(offer())))
    v1 = {"x402Version": 1, "scheme": "exact", "network": "base", "payload": v2["payload"]}
    header = base64.b64encode(json.dumps(v1).encode()).decode()
    response = api.post(
        "/v1/test/verify/quote", {"outcome": "real"}, format="json", HTTP_X_PAYMENT=header
    )
    assert response.json()["error"]["details"]["reason"] == "malformed_payment"


def test_facilitator_refuses_an_authorization_it_already_settled(api, payer, offer):
    """Even with our claim row gone, the facilitator's own ledger refuses the nonce."""
    payment = payer.pay(offer())
    assert post(api, payment=payment).status_code == 200
    PaymentClaim.objects.update(state="released")
    again = post(api, payment=payment)
    assert again.json()["error"]["details"]["reason"] == "invalid_exact_evm_nonce_already_used"
    assert time.time()  # the ledger, not the clock, refused it


def test_decorator_on_a_single_handler_prices_it(api, payer):
    offered = decode_offer(api.get("/v1/test-method/fetch"))
    assert offered.accepts[0].amount == "10000"
    response = api.get("/v1/test-method/fetch", HTTP_PAYMENT_SIGNATURE=payer.pay(offered))
    assert response.status_code == 200
    assert response.json()["tier"] == "paid"
    assert decode_payment_response_header(response["PAYMENT-RESPONSE"]).success


def test_priced_handler_gets_its_call_as_an_argument_not_on_the_request(api, payer):
    offered = decode_offer(api.get("/v1/test-method/fetch"))
    body = api.get("/v1/test-method/fetch", HTTP_PAYMENT_SIGNATURE=payer.pay(offered)).json()
    assert (body["seen_tier"], body["seen_payer"]) == ("paid", payer.address.lower())
    assert body["billing_on_request"] == []


def test_one_authorization_pays_for_three_uncharged_runs_then_402(api, payer, offer):
    """A refusal after the payment was verified is free, but not for ever: the fourth run
    of one authorization is refused before the work, and a new one is served."""
    payment = payer.pay(offer())
    for _ in range(UNCHARGED_RUNS_PER_AUTHORIZATION):
        assert post(api, outcome="over_capacity", payment=payment).status_code == 503
    again = post(api, outcome="over_capacity", payment=payment)
    assert again.status_code == 402
    assert again.json()["error"]["details"]["reason"] == "payment_retries_used"
    assert "PAYMENT-REQUIRED" in again
    # The refused run left no claim of its own: three released runs, nothing charged.
    assert PaymentClaim.objects.filter(state="released").count() == 3
    assert PaymentClaim.objects.count() == 3
    assert post(api, payment=payment).status_code == 402  # not even for a charged outcome
    assert not LocalTransfer.objects.exists()
    assert post(api, payment=payer.pay(offer())).status_code == 200
    assert LocalTransfer.objects.count() == 1
