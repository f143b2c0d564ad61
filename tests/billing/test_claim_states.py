"""What a retry with an already-claimed authorization is told, for each state of its claim."""

from __future__ import annotations

import datetime

import pytest
from django.utils import timezone

from billing.models import PaymentClaim
from tests.billing.conftest import decode_offer, post

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.billing.urls")]


def test_retry_while_settlement_is_in_flight_is_told_to_wait_not_to_pay_again(api, payer, offer):
    payment = payer.pay(offer())
    assert post(api, payment=payment).status_code == 200
    # As a worker leaves it when it dies between sending the settlement and its answer.
    died = timezone.now() - datetime.timedelta(minutes=10)
    PaymentClaim.objects.update(state=PaymentClaim.State.SETTLING, updated_at=died)
    retry = post(api, payment=payment)
    assert retry.status_code == 503
    error = retry.json()["error"]
    assert (error["code"], error["details"]["reason"]) == (
        "settlement_pending",
        "settlement_pending",
    )
    assert "PAYMENT-REQUIRED" not in retry
    assert "accepts" not in error["details"]
    assert retry["Retry-After"]
    assert PaymentClaim.objects.get().state == PaymentClaim.State.SETTLING


def test_second_use_while_the_first_is_being_settled_is_refused_as_used(api, payer, offer):
    payment = payer.pay(offer())
    assert post(api, payment=payment).status_code == 200
    # Another request holds the authorization and is settling it right now.
    PaymentClaim.objects.update(state=PaymentClaim.State.SETTLING, updated_at=timezone.now())
    second = post(api, payment=payment)
    decode_offer(second)
    assert second.json()["error"]["details"]["reason"] == "payment_already_used"


def test_retry_of_a_settled_authorization_is_offered_a_new_payment(api, payer, offer):
    payment = payer.pay(offer())
    assert post(api, payment=payment).status_code == 200
    retry = post(api, payment=payment)
    decode_offer(retry)
    assert retry.json()["error"]["details"]["reason"] == "payment_already_used"
