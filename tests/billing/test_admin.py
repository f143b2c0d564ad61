"""Staff read the payment ledger in the admin; nobody edits it there."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from billing.models import LocalTransfer, Offer, PaymentClaim, Settlement
from billing.money import token_amount
from tests.billing.conftest import post

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.billing.urls")]

BASE_USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
LEDGERS = [
    "offer",
    "paymentclaim",
    "settlement",
    "refusal",
    "trialuse",
    "trialbudget",
    "localtransfer",
    "creditaccount",
    "credithold",
    "moneyevent",
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
    settings.ROOT_URLCONF = "wiring.urls"
    assert staff.get(f"/admin/billing/{model}/").status_code == 200
    assert staff.get(f"/admin/billing/{model}/add/").status_code == 403


def test_claims_filter_by_route_state_and_payer(staff, ledger, payer, settings):
    settings.ROOT_URLCONF = "wiring.urls"
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


def _column(page, name: str) -> list[str]:
    import lxml.html

    tree = lxml.html.fromstring(page.content.decode())
    return [td.text_content().strip() for td in tree.xpath(f"//td[@class='field-{name}']")]


@pytest.mark.parametrize("model", ["offer", "paymentclaim", "settlement", "localtransfer"])
def test_money_reads_in_usdc_not_atomic_units(staff, ledger, model, settings):
    settings.ROOT_URLCONF = "wiring.urls"
    amounts = _column(staff.get(f"/admin/billing/{model}/"), "money")
    assert amounts and set(amounts) == {"0.01 USDC"}
    row = {
        "offer": Offer,
        "paymentclaim": PaymentClaim,
        "settlement": Settlement,
        "localtransfer": LocalTransfer,
    }[model].objects.first()
    change = staff.get(f"/admin/billing/{model}/{row.pk}/change/").content.decode()
    assert "0.01 USDC" in change
    assert ">10000<" not in change


def test_an_amount_of_an_unknown_asset_is_shown_raw_and_said_so():
    assert token_amount("10000", network="eip155:84532", asset="0x" + "ab" * 20) == (
        f"10,000 atomic units of 0x{'ab' * 20}"
    )
    assert token_amount("1234567", network="eip155:8453", asset=BASE_USDC) == "1.234567 USDC"
    assert token_amount("ten", network="eip155:8453", asset=BASE_USDC).endswith("atomic units)")
