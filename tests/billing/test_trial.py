"""The free trial: a few calls per IP per day, spent only by charged outcomes."""

from __future__ import annotations

import pytest

from billing.client_ip import client_ip
from billing.models import Offer, TrialBudget, TrialUse
from tests.billing.conftest import decode_offer, post

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.billing.urls")]


@pytest.fixture
def trial(settings):
    settings.ATTEST_TRIAL_CALLS_PER_DAY = 2
    return settings


def test_trial_call_is_served_free_and_says_how_many_are_left(api, trial):
    response = post(api)
    assert response.status_code == 200
    body = response.json()
    assert (body["tier"], body["seen_tier"], body["trial_calls_left"]) == ("trial", "trial", 1)
    # A trial moves no money: it names no payment rail or network.
    assert "rail" not in body and "network" not in body
    assert "PAYMENT-RESPONSE" not in response
    assert TrialUse.objects.get().route == "verify/quote"
    assert post(api).json()["trial_calls_left"] == 0


def test_an_uncharged_trial_call_does_not_lower_the_count_left(api, trial):
    assert post(api, outcome="blocked").status_code == 403
    assert post(api).json()["trial_calls_left"] == 1


def test_trial_is_refused_past_its_size(api, trial):
    assert post(api).status_code == 200
    assert post(api, outcome="http_404").status_code == 200
    refused = post(api)
    decode_offer(refused)
    assert refused.json()["error"]["details"]["reason"] == "trial_exhausted"
    assert TrialBudget.objects.get().used == 2


@pytest.mark.parametrize(
    "outcome",
    [
        "blocked",
        "host_not_found",
        "match_too_costly",
        "rate_limited",
        "over_capacity",
        "not_on_edge",
    ],
)
def test_uncharged_outcomes_do_not_spend_the_trial(api, trial, outcome):
    for _ in range(3):
        assert post(api, outcome=outcome).status_code >= 400
    assert TrialBudget.objects.get().used == 0
    assert post(api).status_code == 200
    assert post(api).status_code == 200
    assert post(api).status_code == 402


def test_validation_errors_do_not_spend_the_trial(api, trial):
    for _ in range(3):
        assert post(api, outcome="nonsense").status_code == 400
    assert not TrialBudget.objects.filter(used__gt=0).exists()


def test_batch_larger_than_three_citations_is_never_a_trial(api, trial):
    refused = post(api, "verify/citations", citations=4)
    decode_offer(refused)
    details = refused.json()["error"]["details"]
    assert details["reason"] == "trial_too_large"
    assert details["accepts"][0]["amount"] == "100000"
    assert not TrialBudget.objects.filter(used__gt=0).exists()
    allowed = post(api, "verify/citations", citations=3)
    assert allowed.json()["tier"] == "trial"


def test_large_batch_can_still_be_paid(api, trial, payer):
    payment = payer.pay(decode_offer(post(api, "verify/citations", citations=10)))
    response = post(api, "verify/citations", citations=10, payment=payment)
    assert response.status_code == 200
    assert response.json()["tier"] == "paid"


def test_budget_is_per_ip_from_the_socket(api, trial):
    assert post(api).status_code == 200
    assert post(api).status_code == 200
    # A forged X-Forwarded-For does not buy a fresh budget...
    spoofed = api.post(
        "/v1/test/verify/quote",
        {"outcome": "real"},
        format="json",
        HTTP_X_FORWARDED_FOR="203.0.113.9",
    )
    assert spoofed.status_code == 402
    # ...but another socket address has its own.
    other = api.post(
        "/v1/test/verify/quote", {"outcome": "real"}, format="json", REMOTE_ADDR="198.51.100.7"
    )
    assert other.status_code == 200


def test_trusted_proxy_forwards_the_client_address(rf, settings):
    import ipaddress

    settings.ATTEST_TRUSTED_PROXIES = (ipaddress.ip_network("10.0.0.0/8"),)
    via_proxy = rf.get(
        "/", REMOTE_ADDR="10.1.2.3", HTTP_X_FORWARDED_FOR="6.6.6.6, 198.51.100.7, 10.9.9.9"
    )
    assert client_ip(via_proxy) == "198.51.100.7"
    direct = rf.get("/", REMOTE_ADDR="192.0.2.1", HTTP_X_FORWARDED_FOR="198.51.100.7")
    assert client_ip(direct) == "192.0.2.1"


@pytest.mark.parametrize("remote_addr", ["", "unix:/run/attest.sock"], ids=repr)
def test_caller_without_an_ip_address_gets_the_offer_not_a_server_error(api, trial, remote_addr):
    api.raise_request_exception = False
    response = api.post(
        "/v1/test/verify/quote", {"outcome": "real"}, format="json", REMOTE_ADDR=remote_addr
    )
    decode_offer(response)
    # No address means no budget was ever on offer, not that one ran out.
    assert response.json()["error"]["details"]["reason"] == "payment_required"
    assert not TrialBudget.objects.exists()
    assert Offer.objects.get().caller == ""


def test_caller_without_an_ip_address_can_still_pay(api, payer, offer):
    payment = payer.pay(offer())
    response = api.post(
        "/v1/test/verify/quote",
        {"outcome": "real"},
        format="json",
        REMOTE_ADDR="unix:/run/attest.sock",
        HTTP_PAYMENT_SIGNATURE=payment,
    )
    assert response.status_code == 200, response.content
    assert response.json()["tier"] == "paid"


def call_from(api, remote_addr: str):
    return api.post(
        "/v1/test/verify/quote", {"outcome": "real"}, format="json", REMOTE_ADDR=remote_addr
    )


def test_ipv6_callers_share_one_budget_per_64_network(api, trial):
    # A subscriber holds a whole /64: hopping between its addresses buys no new budget.
    assert call_from(api, "2001:db8:1:2::1").status_code == 200
    assert call_from(api, "2001:db8:1:2:aaaa:bbbb:cccc:dddd").status_code == 200
    refused = call_from(api, "2001:db8:1:2::ffff")
    decode_offer(refused)
    assert refused.json()["error"]["details"]["reason"] == "trial_exhausted"
    # Another /64 is another caller.
    assert call_from(api, "2001:db8:1:3::1").status_code == 200
    assert TrialBudget.objects.get(client_ip="2001:db8:1:2::").used == 2
    # The ledger still names the address each call came from.
    assert TrialUse.objects.filter(client_ip="2001:db8:1:2::1").exists()


def test_ipv4_mapped_ipv6_address_spends_the_ipv4_budget(api, trial):
    assert call_from(api, "192.0.2.5").status_code == 200
    assert call_from(api, "::ffff:192.0.2.5").status_code == 200
    assert call_from(api, "192.0.2.5").status_code == 402
    assert TrialBudget.objects.get().used == 2


def test_places_held_by_running_calls_are_busy_not_exhausted(api, trial):
    # Two calls of this address are still running (each holds a place, as admission takes
    # it before the work); a third asks meanwhile. Neither place is spent yet, so the day's
    # budget is not exhausted: the 402 says the places are busy.
    from billing.trial import trial_day, trial_refund, trial_reserve

    day, ip = trial_day(), "127.0.0.1"
    assert trial_reserve(client_ip=ip, day=day) == 1
    assert trial_reserve(client_ip=ip, day=day) == 0
    busy = post(api)
    decode_offer(busy)
    assert busy.json()["error"]["details"]["reason"] == "trial_busy"
    # One of them ends uncharged and gives its place back: the next call is a trial.
    trial_refund(client_ip=ip, day=day)
    served = post(api)
    assert (served.status_code, served.json()["tier"]) == (200, "trial")
    # The other ends uncharged too; two charged calls then spend the budget for the day.
    trial_refund(client_ip=ip, day=day)
    assert post(api).status_code == 200
    assert TrialBudget.objects.get().spent == 2
    assert post(api).json()["error"]["details"]["reason"] == "trial_exhausted"
