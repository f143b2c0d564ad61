"""Money events are rows written with the money they move, and a day of them adds up: the
draws and settlements match the balances and the transfers the facilitator made."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.db.models import Sum
from django.utils import timezone

from billing.models import CreditAccount, CreditHold, LocalTransfer, MoneyEvent, PaymentClaim
from billing.services.events import day_totals
from tests.billing.conftest import post
from tests.billing.test_credit import buy, spend

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.billing.urls")]


def test_x402_claims_settlements_and_releases_are_rows(api, payer, offer):
    post(api, payment=payer.pay(offer()))
    post(api, outcome="host_not_found", payment=payer.pay(offer()))
    events = list(MoneyEvent.objects.order_by("pk").values_list("rail", "kind", "amount"))
    assert events == [
        ("x402", "claim", 10_000),
        ("x402", "settle", 10_000),
        ("x402", "claim", 10_000),
        ("x402", "release", 10_000),
    ]
    settled, released = PaymentClaim.objects.order_by("pk")
    assert MoneyEvent.objects.get(kind="settle").claim == settled
    assert MoneyEvent.objects.get(kind="release").claim == released


def test_a_days_draws_and_settlements_match_balances_and_transfers(api, payer, offer):
    first = buy(api, payer, "1.00").json()["credential"]
    second = buy(api, payer, "0.50").json()["credential"]
    buy(api, payer, "0.25", credential=first)
    for _ in range(3):
        spend(api, first)  # drawn
    spend(api, first, outcome="host_not_found")  # released
    spend(api, second, route="verify/citations")  # drawn, 0.10
    post(api, payment=payer.pay(offer()))  # x402-paid call, settled
    post(api, outcome="blocked", payment=payer.pay(offer()))  # released

    totals = day_totals(timezone.now().date())
    balances = CreditAccount.objects.aggregate(total=Sum("balance"))["total"]
    held = CreditHold.objects.filter(state="held").aggregate(total=Sum("amount"))["total"] or 0
    # Credit: what was bought, less what was drawn, is what the balances (and live holds) hold.
    assert totals[("credit", "top_up")] == 1_750_000
    assert totals[("credit", "draw")] == 3 * 10_000 + 100_000
    assert totals[("credit", "top_up")] - totals[("credit", "draw")] == balances + held
    assert totals[("credit", "hold")] == totals[("credit", "draw")] + totals[("credit", "release")]
    # x402: every settlement is a transfer the facilitator made, top-ups included.
    transfers = sum(int(t.value) for t in LocalTransfer.objects.all())
    assert totals[("x402", "settle")] == transfers == 1_750_000 + 10_000
    assert totals[("x402", "claim")] == totals[("x402", "settle")] + totals[("x402", "release")]


def test_staff_read_balances_holds_and_events_but_cannot_change_them(client, api, payer, settings):
    credential = buy(api, payer, "1.00").json()["credential"]
    spend(api, credential)
    settings.ROOT_URLCONF = "wiring.urls"
    client.force_login(User.objects.create_superuser("staff", "s@example.com", "pw"))
    accounts = client.get("/admin/billing/creditaccount/")
    assert accounts.status_code == 200 and b"0.99" in accounts.content
    events = client.get("/admin/billing/moneyevent/", {"kind": "draw"})
    assert events.status_code == 200 and b"verify/quote" in events.content
    hold = CreditHold.objects.get()
    change = client.get(f"/admin/billing/credithold/{hold.pk}/change/")
    assert change.status_code == 200 and b'name="_save"' not in change.content
    assert client.get("/admin/billing/moneyevent/add/").status_code == 403
