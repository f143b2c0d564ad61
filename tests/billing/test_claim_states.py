"""What a retry with an already-claimed authorization gets, for each state of its claim.

A worker's death is played here by leaving the claim as that worker would have left it
(state, lease, records) and letting the lease run out; tests/billing/test_worker_crash.py
kills real server processes.
"""

from __future__ import annotations

import datetime

import pytest
from django.db import IntegrityError
from django.utils import timezone
from x402.http import decode_payment_response_header

from billing.models import LocalTransfer, PaidAnswer, PaymentClaim, Settlement
from tests.billing.conftest import decode_offer, post

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.billing.urls")]

State = PaymentClaim.State


def _lease(seconds: float) -> datetime.datetime:
    return timezone.now() + datetime.timedelta(seconds=seconds)


def test_retry_while_settlement_is_in_flight_is_told_to_wait_not_to_pay_again(api, payer, offer):
    payment = payer.pay(offer())
    assert post(api, payment=payment).status_code == 200
    # Another worker holds the authorization and is settling it right now.
    PaymentClaim.objects.update(state=State.SETTLING, lease_until=_lease(40))
    retry = post(api, payment=payment)
    assert retry.status_code == 503
    error = retry.json()["error"]
    assert (error["code"], error["details"]["reason"]) == (
        "settlement_pending",
        "settlement_pending",
    )
    assert "PAYMENT-REQUIRED" not in retry
    assert "accepts" not in error["details"]
    # Retry-After is when the settling worker's lease ends, not a guess.
    assert 35 <= int(retry["Retry-After"]) <= 40
    assert PaymentClaim.objects.get().state == State.SETTLING


def test_retry_while_the_work_is_running_is_told_to_wait(api, payer, offer):
    payment = payer.pay(offer())
    assert post(api, payment=payment).status_code == 200
    PaymentClaim.objects.update(state=State.CLAIMED, lease_until=_lease(60))
    retry = post(api, payment=payment)
    assert retry.status_code == 503
    error = retry.json()["error"]
    assert (error["code"], error["details"]["reason"]) == ("settlement_pending", "work_in_progress")
    assert "PAYMENT-REQUIRED" not in retry


def test_same_payment_on_another_request_while_in_flight_is_already_used(api, payer, offer):
    payment = payer.pay(offer())
    assert post(api, payment=payment).status_code == 200
    PaymentClaim.objects.update(state=State.SETTLING, lease_until=_lease(40))
    other = post(api, outcome="http_404", payment=payment)
    decode_offer(other)
    assert other.json()["error"]["details"]["reason"] == "payment_already_used"


def test_claim_of_a_worker_that_died_mid_work_is_freed_once_its_lease_ends(api, payer, offer):
    payment = payer.pay(offer())
    assert post(api, outcome="blocked", payment=payment).status_code == 403
    # As a worker killed mid-work leaves it: claimed, nothing settled, the lease run out.
    PaymentClaim.objects.update(state=State.CLAIMED, lease_until=_lease(-1), outcome="")
    retry = post(api, payment=payment)
    assert retry.status_code == 200, retry.content
    assert decode_payment_response_header(retry["PAYMENT-RESPONSE"]).success
    abandoned, served = PaymentClaim.objects.order_by("created_at")
    assert (abandoned.state, abandoned.outcome) == ("released", "abandoned_mid_work")
    assert (served.state, served.outcome) == ("settled", "charged")
    assert LocalTransfer.objects.count() == 1


def test_work_that_outlived_its_lease_is_not_settled(api, payer, offer):
    response = post(api, outcome="overrun", payment=payer.pay(offer()))
    decode_offer(response)
    assert response.json()["error"]["details"]["reason"] == "payment_already_used"
    assert not LocalTransfer.objects.exists()
    assert not PaidAnswer.objects.exists()


def test_worker_that_died_mid_settle_after_the_money_moved_is_reconciled(api, payer, offer):
    payment = payer.pay(offer())
    first = post(api, payment=payment, request_id="worker-that-died")
    assert first.status_code == 200
    # As a worker killed between the transfer and the facilitator's answer leaves it: the
    # money moved (LocalTransfer), no settlement recorded, the claim settling, lease over.
    Settlement.objects.all().delete()
    PaidAnswer.objects.update(payment_response="")
    PaymentClaim.objects.update(state=State.SETTLING, lease_until=_lease(-1), outcome="")
    retry = post(api, payment=payment)
    assert retry.status_code == 200, retry.content
    assert retry.content == first.content  # the stored answer, byte for byte
    assert retry.json()["work_request_id"] == "worker-that-died"
    assert decode_payment_response_header(retry["PAYMENT-RESPONSE"]).success
    assert LocalTransfer.objects.count() == 1  # asked again, the facilitator moved nothing
    claim = PaymentClaim.objects.get()
    assert (claim.state, claim.outcome) == ("settled", "charged")


def test_worker_that_died_after_recording_its_settlement_is_settled_from_the_record(
    api, payer, offer
):
    payment = payer.pay(offer())
    first = post(api, payment=payment)
    # Died after writing the settlement row, before marking the claim settled.
    PaymentClaim.objects.update(state=State.SETTLING, lease_until=_lease(-1))
    LocalTransfer.objects.all().delete()  # the facilitator would now settle it again...
    retry = post(api, payment=payment)
    assert retry.content == first.content
    assert not LocalTransfer.objects.exists()  # ...but the local record answered first
    assert PaymentClaim.objects.get().state == State.SETTLED


def test_pending_settlement_that_never_moved_money_is_settled_by_the_retry(api, payer, offer):
    payment = payer.pay(offer())
    first = post(api, payment=payment, request_id="first")
    Settlement.objects.all().delete()
    LocalTransfer.objects.all().delete()  # the first settle never landed
    PaidAnswer.objects.update(payment_response="")
    PaymentClaim.objects.update(state=State.PENDING, lease_until=None)
    retry = post(api, payment=payment)
    assert retry.content == first.content
    assert LocalTransfer.objects.count() == 1  # settled now, once


def test_retry_of_a_paid_request_gets_the_same_bytes_and_is_not_charged_again(api, payer, offer):
    payment = payer.pay(offer())
    first = post(api, payment=payment)
    again = post(api, payment=payment)
    assert again.status_code == 200
    assert again.content == first.content
    assert again["PAYMENT-RESPONSE"] == first["PAYMENT-RESPONSE"]
    assert again["X-Request-ID"] != first["X-Request-ID"]
    assert LocalTransfer.objects.count() == 1
    assert Settlement.objects.count() == 1


def test_retry_with_the_body_in_another_key_order_is_the_same_request(api, payer, offer):
    payment = payer.pay(offer())
    first = api.post(
        "/v1/test/verify/quote",
        data='{"outcome": "real", "citations": 1}',
        content_type="application/json",
        HTTP_PAYMENT_SIGNATURE=payment,
    )
    again = api.post(
        "/v1/test/verify/quote",
        data='{"citations":1,"outcome":"real"}',
        content_type="application/json",
        HTTP_PAYMENT_SIGNATURE=payment,
    )
    assert again.content == first.content


@pytest.mark.parametrize(
    "change",
    [
        {"outcome": "http_404"},  # another body
        {"route": "fetch"},  # another route at the same price
    ],
    ids=["other_body", "other_route"],
)
def test_same_payment_on_another_request_is_already_used(api, payer, offer, change):
    payment = payer.pay(offer())
    assert post(api, payment=payment).status_code == 200
    other = post(api, payment=payment, **change)
    decode_offer(other)
    assert other.json()["error"]["details"]["reason"] == "payment_already_used"
    assert LocalTransfer.objects.count() == 1


def test_stored_answer_is_not_replayed_after_the_retry_window(api, payer, offer):
    payment = payer.pay(offer())
    assert post(api, payment=payment).status_code == 200
    PaidAnswer.objects.update(created_at=timezone.now() - datetime.timedelta(minutes=11))
    late = post(api, payment=payment)
    decode_offer(late)
    assert late.json()["error"]["details"]["reason"] == "payment_already_used"


def test_refused_settlement_discards_the_answer(api, payer, offer, settings):
    from tests.billing.conftest import NETWORK
    from tests.billing.facilitator_server import FacilitatorServer

    with FacilitatorServer(NETWORK, settle_revert="ERC20: transfer amount exceeds balance") as f:
        settings.X402_FACILITATOR_URL = f.url
        assert post(api, payment=payer.pay(offer())).status_code == 402
    assert not PaidAnswer.objects.exists()
    assert PaymentClaim.objects.get().state == State.RELEASED


def test_a_claim_in_flight_always_has_a_lease(api, payer, offer):
    assert post(api, payment=payer.pay(offer())).status_code == 200
    with pytest.raises(IntegrityError):
        PaymentClaim.objects.update(state=State.SETTLING, lease_until=None)


def test_answers_of_settled_claims_past_their_window_are_pruned_by_later_paid_calls(
    api, payer, offer
):
    from billing.services import answers

    assert post(api, payment=payer.pay(offer())).status_code == 200
    # Its retry window is over (the row's age is what counts), the claim settled.
    PaidAnswer.objects.update(
        created_at=timezone.now() - datetime.timedelta(seconds=answers.REPLAY_SECONDS + 1)
    )
    expired = PaidAnswer.objects.get().pk
    for _ in range(answers.PRUNE_EVERY):  # pruned within PRUNE_EVERY stored answers
        assert post(api, payment=payer.pay(offer())).status_code == 200
    assert not PaidAnswer.objects.filter(pk=expired).exists()
    assert PaidAnswer.objects.count() == answers.PRUNE_EVERY
