"""The x402 payment-identifier extension: a payer's idempotency key, never a second charge.

Each payment here is a new EIP-3009 authorization signed by the SDK's own client with
the identifier the SDK's extension helper appends, verified and settled by the SDK's
facilitator behind a real HTTP server on loopback.
"""

from __future__ import annotations

import datetime

import pytest
from django.utils import timezone
from x402.extensions.payment_identifier import (
    PAYMENT_IDENTIFIER,
    append_payment_identifier_to_extensions,
    declare_payment_identifier_extension,
    generate_payment_id,
)
from x402.http import decode_payment_response_header, encode_payment_signature_header

from billing.models import PaidAnswer, PaymentClaim, Settlement
from tests.billing.conftest import NETWORK, decode_offer, post
from tests.billing.facilitator_server import FacilitatorServer

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.billing.urls")]

State = PaymentClaim.State


def pay_with_id(payer, offer, payment_id: str) -> str:
    """A new payment for ``offer`` carrying ``payment_id``, as the SDK's client makes it."""
    extensions = dict(offer.extensions or {})
    append_payment_identifier_to_extensions(extensions, payment_id)
    payload = payer.client.create_payment_payload(offer, extensions=extensions)
    return encode_payment_signature_header(payload)


@pytest.fixture
def facilitator(settings):
    with FacilitatorServer(NETWORK) as server:
        settings.X402_FACILITATOR_URL = server.url
        yield server


def test_offer_declares_the_extension_through_the_sdk(api, offer, facilitator):
    extensions = offer().extensions
    assert extensions[PAYMENT_IDENTIFIER] == declare_payment_identifier_extension(required=False)
    assert "bazaar" in extensions


def test_same_identifier_and_body_get_the_stored_answer_and_one_charge(
    api, payer, offer, facilitator
):
    payment_id = generate_payment_id()
    first = post(api, payment=pay_with_id(payer, offer(), payment_id))
    assert first.status_code == 200, first.content
    # The answer was lost: the client pays anew under the same key (a new authorization).
    again = post(api, payment=pay_with_id(payer, offer(), payment_id))
    assert again.status_code == 200, again.content
    assert again.content == first.content
    assert again["PAYMENT-RESPONSE"] == first["PAYMENT-RESPONSE"]
    assert decode_payment_response_header(again["PAYMENT-RESPONSE"]).success
    assert facilitator.calls.count("/settle") == 1
    assert facilitator.landed == 1
    assert Settlement.objects.count() == 1
    claim = PaymentClaim.objects.get()
    assert (claim.payment_id, claim.state, claim.outcome) == (payment_id, "settled", "charged")


def test_same_identifier_on_another_body_is_a_conflict_not_a_charge(api, payer, offer, facilitator):
    payment_id = generate_payment_id()
    assert post(api, payment=pay_with_id(payer, offer(), payment_id)).status_code == 200
    other = post(api, outcome="bot_wall", payment=pay_with_id(payer, offer(), payment_id))
    assert other.status_code == 409, other.content
    error = other.json()["error"]
    assert (error["code"], error["details"]["reason"]) == (
        "payment_identifier_conflict",
        "other_request",
    )
    assert "PAYMENT-REQUIRED" not in other
    assert facilitator.calls.count("/settle") == 1
    assert facilitator.landed == 1
    assert PaymentClaim.objects.count() == 1


def test_identifiers_are_per_payer(api, payer, offer, facilitator):
    from tests.billing.conftest import Payer

    payment_id = generate_payment_id()
    assert post(api, payment=pay_with_id(payer, offer(), payment_id)).status_code == 200
    stranger = post(api, outcome="bot_wall", payment=pay_with_id(Payer(), offer(), payment_id))
    assert stranger.status_code == 200, stranger.content
    assert facilitator.landed == 2


def test_without_an_identifier_a_new_payment_is_a_new_charge(api, payer, offer, facilitator):
    assert post(api, payment=payer.pay(offer())).status_code == 200
    assert post(api, payment=payer.pay(offer())).status_code == 200
    assert facilitator.landed == 2
    assert set(PaymentClaim.objects.values_list("payment_id", flat=True)) == {""}


def test_an_uncharged_outcome_leaves_the_identifier_free(api, payer, offer, facilitator):
    payment_id = generate_payment_id()
    refused = post(api, outcome="host_not_found", payment=pay_with_id(payer, offer(), payment_id))
    assert refused.status_code == 422
    assert facilitator.landed == 0
    retried = post(api, payment=pay_with_id(payer, offer(), payment_id))
    assert retried.status_code == 200, retried.content
    assert facilitator.landed == 1


def test_while_the_first_payment_is_in_flight_the_second_waits(api, payer, offer, facilitator):
    payment_id = generate_payment_id()
    assert post(api, payment=pay_with_id(payer, offer(), payment_id)).status_code == 200
    # The first payment's worker is still working (as test_claim_states plays it).
    lease = timezone.now() + datetime.timedelta(seconds=60)
    PaymentClaim.objects.update(state=State.CLAIMED, lease_until=lease)
    waiting = post(api, payment=pay_with_id(payer, offer(), payment_id))
    assert waiting.status_code == 503
    error = waiting.json()["error"]
    assert (error["code"], error["details"]["reason"]) == ("settlement_pending", "work_in_progress")
    assert PaymentClaim.objects.count() == 1
    assert facilitator.landed == 1


def test_an_answer_no_longer_kept_is_a_conflict_not_a_second_charge(api, payer, offer, facilitator):
    payment_id = generate_payment_id()
    assert post(api, payment=pay_with_id(payer, offer(), payment_id)).status_code == 200
    PaidAnswer.objects.update(created_at=timezone.now() - datetime.timedelta(days=1))
    late = post(api, payment=pay_with_id(payer, offer(), payment_id))
    assert late.status_code == 409, late.content
    assert late.json()["error"]["details"]["reason"] == "answer_expired"
    assert facilitator.landed == 1


@pytest.mark.parametrize(
    "entry",
    [
        {"info": {"required": False, "id": "short"}},
        {"info": {"required": False, "id": "has spaces in it, 16+ chars"}},
        {"info": {"id": "pay_0123456789abcdef"}},
        "not an object",
    ],
    ids=["too_short", "bad_characters", "no_required_flag", "not_an_object"],
)
def test_a_malformed_identifier_is_refused_before_verification(
    api, payer, offer, facilitator, entry
):
    terms = offer()
    extensions = {**(terms.extensions or {}), PAYMENT_IDENTIFIER: entry}
    payload = payer.client.create_payment_payload(terms, extensions=extensions)
    response = post(api, payment=encode_payment_signature_header(payload))
    decode_offer(response)
    assert response.json()["error"]["details"]["reason"] == "malformed_payment_identifier"
    assert "/verify" not in facilitator.calls
    assert not PaymentClaim.objects.exists()


def test_the_payers_own_schema_is_not_what_checks_the_identifier(api, payer, offer, facilitator):
    """A schema sent with the payment (here one no id can match) is ignored for ours."""
    terms = offer()
    entry = {
        "info": {"required": False, "id": generate_payment_id()},
        "schema": {"type": "object", "properties": {"id": {"pattern": "^(a+)+$"}}},
    }
    extensions = {**(terms.extensions or {}), PAYMENT_IDENTIFIER: entry}
    payload = payer.client.create_payment_payload(terms, extensions=extensions)
    response = post(api, payment=encode_payment_signature_header(payload))
    assert response.status_code == 200, response.content
