"""The staff dashboard: per-day calls, charges, refusals and failures, and its chart."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import lxml.html
import pytest
from django.contrib.auth.models import Group
from django.utils import timezone

from attest.apps import AUDITORS_GROUP
from billing.models import PaymentClaim, Refusal, Settlement
from tests.citations.conftest import make_ledger
from verification.models import RefusalTally, Verification
from wiring.dashboard import Day, chart_svg, daily_figures

pytestmark = pytest.mark.django_db

NETWORK = "eip155:84532"
USDC = "0x036CbD53842c5426634e7929541eC2318f3dCF7e"  # Base Sepolia USDC (the x402 default)


def _at(day: date, hour: int = 12) -> datetime:
    return datetime(day.year, day.month, day.day, hour, tzinfo=UTC)


def _verification(day: date, **fields) -> None:
    values = {
        "route": "verify/quote",
        "request_id": "r",
        "outcome": "answered",
        "tier": "trial",
        "status_code": 200,
        "mode": "fuzzy",
        "requested_url": "https://example.org/",
        "total_ms": 10.0,
    }
    record = Verification.objects.create(**{**values, **fields})
    Verification.objects.filter(pk=record.pk).update(created_at=_at(day))


def _settlement(day: date, amount: str, nonce: str, success: bool = True) -> None:
    claim = PaymentClaim.objects.create(
        route="verify/quote",
        network=NETWORK,
        asset=USDC,
        payer="0xpayer",
        nonce=nonce,
        amount=amount,
        valid_before=0,
        state="settled",
    )
    settlement = Settlement.objects.create(
        claim=claim, facilitator="local", success=success, network=NETWORK, amount=amount
    )
    Settlement.objects.filter(pk=settlement.pk).update(created_at=_at(day))


@pytest.fixture
def history():
    today = timezone.now().date()
    yesterday = today - timedelta(days=1)
    _verification(yesterday)
    _verification(yesterday, tier="paid")
    _verification(yesterday, tier="sample")  # answered, not charged
    _verification(today, outcome="refused", status_code=403, error_code="blocked", tier="")
    _verification(today, outcome="failed", status_code=500, error_code="internal_error")
    _verification(today - timedelta(days=40))  # outside the window
    RefusalTally.objects.create(
        hour=_at(today, 3), route="verify/quote", error_code="blocked", count=3, last_at=_at(today)
    )
    refusal = Refusal.objects.create(
        minute=_at(today), route="verify/quote", reason="invalid_signature", count=2
    )
    assert refusal.count == 2
    _settlement(yesterday, "10000", "0x1")
    _settlement(yesterday, "80000", "0x2")
    _settlement(yesterday, "99990000", "0x3", success=False)  # not money received
    ledger = make_ledger()
    ledger.ingest("u", ("m1", "I live in Oslo.", "2026-01-01T00:00:00Z"))
    return today, yesterday


def test_figures_per_day(history):
    today, yesterday = history
    days = daily_figures(days=7, today=today)
    assert [d.day for d in days] == [today - timedelta(days=i) for i in range(6, -1, -1)]
    by_day = {d.day: d for d in days}
    old, new = by_day[yesterday], by_day[today]
    assert (old.calls, old.charged, old.refusals, old.failures) == (3, 2, 0, 0)
    assert old.money == "0.09 USDC"
    # Today: one refused after the checks, three refused before payment, one failure.
    assert (new.calls, new.charged, new.refusals, new.failures) == (5, 0, 4, 1)
    assert new.payment_refusals == 2
    assert new.ledger == 1
    assert new.money == "—"
    assert sum(d.calls for d in days) == 8  # the one 40 days ago is not counted


@pytest.fixture
def auditor(client, django_user_model):
    user = django_user_model.objects.create_user("audrey", "audrey@example.org", "pw")
    user.is_staff = True
    user.save()
    user.groups.add(Group.objects.get(name=AUDITORS_GROUP))
    client.force_login(user)
    return client


def test_the_dashboard_page_shows_the_table_and_the_chart(auditor, history):
    _, yesterday = history
    response = auditor.get("/admin/dashboard/?days=7")
    assert response.status_code == 200
    tree = lxml.html.fromstring(response.content.decode())
    row = tree.xpath(f"//tr[@data-day='{yesterday.isoformat()}']/td/text()")
    assert row == [yesterday.isoformat(), "3", "2", "0.09 USDC", "0", "0", "0", "0"]
    assert len(tree.xpath("//table[@id='daily']/tbody/tr")) == 7
    assert "dashboard-chart" in response.content.decode()
    assert auditor.get("/admin/").content.decode().count('href="/admin/dashboard/"') == 1


def test_the_dashboard_refuses_changes_and_strangers(auditor, client, django_user_model):
    assert auditor.post("/admin/dashboard/").status_code == 405
    stranger = django_user_model.objects.create_user("sam", "sam@example.org", "pw")
    stranger.is_staff = True
    stranger.save()
    client.force_login(stranger)
    assert client.get("/admin/dashboard/").status_code == 403
    client.logout()
    assert client.get("/admin/dashboard/").status_code == 302  # to the login page


def test_the_days_asked_for_are_bounded(auditor):
    tree = lxml.html.fromstring(auditor.get("/admin/dashboard/?days=100000").content.decode())
    assert len(tree.xpath("//table[@id='daily']/tbody/tr")) == 90
    tree = lxml.html.fromstring(auditor.get("/admin/dashboard/?days=soon").content.decode())
    assert len(tree.xpath("//table[@id='daily']/tbody/tr")) == 14


def test_chart_bars_are_as_tall_as_their_figures():
    from lxml import etree

    days = [Day(date(2026, 1, 1), calls=10, charged=5), Day(date(2026, 1, 2), failures=2)]
    svg = etree.fromstring(chart_svg(days).encode())
    bars = {
        (g.get("data-day"), r.get("data-series")): float(r.get("height"))
        for g in svg.iter("{http://www.w3.org/2000/svg}g")
        for r in g
        if r.get("data-series")
    }
    assert bars[("2026-01-01", "calls")] == 2 * bars[("2026-01-01", "charged")] > 0
    assert bars[("2026-01-02", "failures")] == pytest.approx(bars[("2026-01-01", "calls")] / 5)
    assert bars[("2026-01-02", "calls")] == 0


def test_the_chart_scale_is_in_whole_numbers():
    from lxml import etree

    svg = etree.fromstring(chart_svg([Day(date(2026, 1, 1), calls=1)]).encode())
    labels = [t.text for t in svg.iter("{http://www.w3.org/2000/svg}text") if t.text.isdigit()]
    assert labels == ["0", "1", "2", "3", "4"]
