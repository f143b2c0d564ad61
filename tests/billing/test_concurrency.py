"""Parallel requests agree through the database: one payment serves one call."""

from __future__ import annotations

import threading

import pytest
from django.db import connection
from rest_framework.test import APIClient

from billing.models import LocalTransfer, PaymentClaim, TrialBudget
from tests.billing.conftest import post

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.django_db(transaction=True),
    pytest.mark.urls("tests.billing.urls"),
]


def _in_parallel(count: int, send) -> list:
    barrier = threading.Barrier(count)
    results: list = [None] * count

    def worker(index: int) -> None:
        try:
            barrier.wait(timeout=10)
            results[index] = send()
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results


def _charged_once(responses: list) -> None:
    """One payment sent at once many times: served, waited or replayed, never paid twice.

    Every answer is the one paid answer (a retry of the same request gets the kept bytes)
    or 503 settlement_pending while it is in flight; never an offer to pay again.
    """
    served = [r for r in responses if r.status_code == 200]
    waiting = [r for r in responses if r.status_code == 503]
    assert len(served) + len(waiting) == len(responses), [r.status_code for r in responses]
    assert served
    assert len({r.content for r in served}) == 1
    assert all(r.json()["error"]["code"] == "settlement_pending" for r in waiting)
    assert LocalTransfer.objects.count() == 1
    assert PaymentClaim.objects.filter(state="settled").count() == 1


def test_two_concurrent_requests_with_one_payment_are_charged_once(payer, offer):
    payment = payer.pay(offer())
    _charged_once(_in_parallel(2, lambda: post(APIClient(), payment=payment)))


def test_eight_concurrent_requests_with_one_payment_are_charged_once(payer, offer):
    payment = payer.pay(offer())
    _charged_once(_in_parallel(8, lambda: post(APIClient(), payment=payment)))


def test_one_payment_on_eight_different_requests_at_once_serves_exactly_one(payer, offer):
    payment = payer.pay(offer())
    outcomes = ["real", "http_404", "bot_wall", "timeout"] * 2
    responses = _in_parallel(8, lambda: post(APIClient(), outcome=outcomes.pop(), payment=payment))
    statuses = sorted(r.status_code for r in responses)
    assert statuses.count(200) == 1
    assert LocalTransfer.objects.count() == 1


def test_concurrent_trial_calls_never_overspend_the_budget(settings):
    settings.ATTEST_TRIAL_CALLS_PER_DAY = 3
    responses = _in_parallel(8, lambda: post(APIClient()))
    assert sorted(r.status_code for r in responses) == [200] * 3 + [402] * 5
    assert TrialBudget.objects.get().used == 3


def test_concurrent_new_payments_under_one_payment_identifier_are_charged_once(payer, offer):
    """Eight authorizations signed apart, one payment-identifier, sent at once: the one live
    claim per identifier lets one of them pay; the others wait or get its answer."""
    from x402.extensions.payment_identifier import generate_payment_id

    from tests.billing.test_payment_identifier import pay_with_id

    payment_id = generate_payment_id()
    payments = [pay_with_id(payer, offer(), payment_id) for _ in range(8)]
    sent = iter(payments)
    lock = threading.Lock()

    def send():
        with lock:
            payment = next(sent)
        return post(APIClient(), payment=payment)

    _charged_once(_in_parallel(len(payments), send))
    assert PaymentClaim.objects.get().payment_id == payment_id
