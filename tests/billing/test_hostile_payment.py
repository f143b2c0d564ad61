"""Payment headers a careless or hostile client might send: always a 402 with a reason."""

from __future__ import annotations

import base64
import json

import pytest

from billing.models import LocalTransfer, PaymentClaim
from tests.billing.conftest import decode_offer, post

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.billing.urls")]


def encode(value) -> str:
    return base64.b64encode(json.dumps(value).encode()).decode()


def signed(payer, offer) -> dict:
    """A real, valid payment as the JSON object the header carries."""
    return json.loads(base64.b64decode(payer.pay(offer())))


def assert_refused(response, reason: str = "malformed_payment") -> None:
    decode_offer(response)
    assert response.json()["error"]["details"]["reason"] == reason
    assert not PaymentClaim.objects.exists()
    assert not LocalTransfer.objects.exists()


@pytest.mark.parametrize("value", [[1, 2], "x402", None, 5, True], ids=repr)
def test_payment_that_is_json_but_not_an_object_is_refused(api, value):
    assert_refused(post(api, payment=encode(value)))


@pytest.mark.parametrize("version", [3, 0, "2", 2.0, None, "missing"], ids=repr)
def test_payment_naming_another_x402_version_is_refused(api, payer, offer, version):
    payment = signed(payer, offer)
    if version == "missing":
        del payment["x402Version"]
    else:
        payment["x402Version"] = version
    assert_refused(post(api, payment=encode(payment)))


def test_oversized_payment_header_is_refused_unread(api, payer, offer):
    payment = signed(payer, offer)
    payment["extensions"] = {"padding": "x" * 40_000}
    assert_refused(post(api, payment=encode(payment)))


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("value", "1e30"),
        ("value", "-1"),
        ("validAfter", "soon"),
        ("validBefore", " 99999999999"),
        ("to", None),
        ("from", "nothex"),
        ("nonce", 5),
        ("nonce", "zz"),
    ],
    ids=lambda value: repr(value)[:12],
)
def test_malformed_authorization_field_is_refused_not_an_outage(api, payer, offer, field, value):
    payment = signed(payer, offer)
    payment["payload"]["authorization"][field] = value
    assert_refused(post(api, payment=encode(payment)))


@pytest.mark.parametrize("signature", [None, 5, "nothex", "0x"], ids=repr)
def test_malformed_signature_is_refused(api, payer, offer, signature):
    payment = signed(payer, offer)
    payment["payload"]["signature"] = signature
    assert_refused(post(api, payment=encode(payment)))


def test_one_nonce_cannot_be_claimed_under_a_second_spelling(api, payer, offer):
    payment = signed(payer, offer)
    assert post(api, payment=encode(payment)).status_code == 200
    nonce = payment["payload"]["authorization"]["nonce"]
    payment["payload"]["authorization"]["nonce"] = nonce.removeprefix("0x")
    again = post(api, payment=encode(payment))
    decode_offer(again)
    assert again.json()["error"]["details"]["reason"] == "malformed_payment"
    assert PaymentClaim.objects.count() == 1


def test_authorization_valid_for_centuries_is_served_not_a_server_error(api, payer, offer):
    # Signed for real with a validBefore far past what a 64-bit column holds.
    payment = payer.pay_tampered(offer(), max_timeout_seconds=10**30)
    response = post(api, payment=payment)
    assert response.status_code == 200, response.content
    assert response.json()["tier"] == "paid"
    assert PaymentClaim.objects.get().state == PaymentClaim.State.SETTLED
    assert LocalTransfer.objects.count() == 1


def test_deeply_nested_payment_json_is_refused_not_a_server_error(api):
    api.raise_request_exception = False
    nested = '{"x402Version": 2, "payload": ' + "[" * 5000 + "]" * 5000 + "}"
    assert_refused(post(api, payment=base64.b64encode(nested.encode()).decode()))
