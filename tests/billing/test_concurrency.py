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


def test_two_concurrent_requests_with_one_payment_serve_exactly_one(payer, offer):
    payment = payer.pay(offer())
    responses = _in_parallel(2, lambda: post(APIClient(), payment=payment))
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [200, 402]
    [refused] = [r for r in responses if r.status_code == 402]
    assert refused.json()["error"]["details"]["reason"] == "payment_already_used"
    assert LocalTransfer.objects.count() == 1
    assert PaymentClaim.objects.filter(state="settled").count() == 1


def test_eight_concurrent_requests_with_one_payment_serve_exactly_one(payer, offer):
    payment = payer.pay(offer())
    responses = _in_parallel(8, lambda: post(APIClient(), payment=payment))
    assert sorted(r.status_code for r in responses) == [200] + [402] * 7
    assert LocalTransfer.objects.count() == 1


def test_concurrent_trial_calls_never_overspend_the_budget(settings):
    settings.ATTEST_TRIAL_CALLS_PER_DAY = 3
    responses = _in_parallel(8, lambda: post(APIClient()))
    assert sorted(r.status_code for r in responses) == [200] * 3 + [402] * 5
    assert TrialBudget.objects.get().used == 3
