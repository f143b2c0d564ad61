"""Staff read the payment ledger in the admin; nobody edits it there."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from billing.models import PaymentClaim
from tests.billing.conftest import post

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.billing.urls")]

LEDGERS = [
    "offer",
    "paymentclaim",
    "settlement",
    "refusal",
    "trialuse",
    "trialbudget",
    "localtransfer",
]


@pytest.fixture
def staff(client):
    user = User.objects.create_superuser("staff", "staff@example.com", "pw")
    client.force_login(user)
    return client


@pytest.fixture
def ledger(api, payer, offer, settings):
    post(api, payment=payer.pay(offer()))
    post(api, outcome="blocked", payment=payer.pay(offer()))
    settings.ATTEST_TRIAL_CALLS_PER_DAY = 1
    post(api, "fetch")


@pytest.mark.parametrize("model", LEDGERS)
def test_ledger_pages_list_rows_and_refuse_adding(staff, ledger, model, settings):
    settings.ROOT_URLCONF = "attest.urls"
    assert staff.get(f"/admin/billing/{model}/").status_code == 200
    assert staff.get(f"/admin/billing/{model}/add/").status_code == 403


def test_claims_filter_by_route_state_and_payer(staff, ledger, payer, settings):
    settings.ROOT_URLCONF = "attest.urls"
    claim = PaymentClaim.objects.filter(state="released").get()
    page = staff.get(
        "/admin/billing/paymentclaim/",
        {"route": "verify/quote", "state": "released", "q": payer.address.lower()},
    )
    assert page.status_code == 200
    assert claim.outcome == "blocked"
    assert b"blocked" in page.content
    change = staff.get(f"/admin/billing/paymentclaim/{claim.pk}/change/")
    assert change.status_code == 200
    assert b'name="_save"' not in change.content
