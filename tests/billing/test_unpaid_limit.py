"""Free work is bounded: unpaid requests share a per-IP limit; paid requests never count."""

from __future__ import annotations

import pytest
from django.core.cache import cache

from attest.ratelimit import parse_rate, rate_limit
from billing.models import Offer
from tests.billing.conftest import post

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.billing.urls")]


@pytest.fixture
def limit(settings):
    cache.clear()
    settings.ATTEST_UNPAID_RATE = "3/m"
    yield settings
    cache.clear()


def _policy(response) -> dict:
    name, *params = response["RateLimit"].split(";")
    return {"name": name, **{k: int(v) for k, v in (p.split("=") for p in params)}}


def test_unpaid_requests_over_the_limit_get_429_with_the_real_wait(api, limit):
    answers = [post(api) for _ in range(3)]
    assert [a.status_code for a in answers] == [402, 402, 402]
    assert [_policy(a)["r"] for a in answers] == [2, 1, 0]
    assert answers[0]["RateLimit-Policy"] == '"unpaid";q=3;w=60'
    refused = post(api)
    assert refused.status_code == 429
    error = refused.json()["error"]
    assert (error["code"], error["details"]["reason"]) == ("rate_limited", "unpaid_requests")
    wait = int(refused["Retry-After"])
    # The wait is what is left of this caller's window, the same figure RateLimit gives.
    assert 1 <= wait <= 60
    assert _policy(refused) == {"name": '"unpaid"', "r": 0, "t": wait}
    assert "PAYMENT-REQUIRED" not in refused
    # A refused request writes nothing: the three offers are one counted row.
    assert list(Offer.objects.values_list("count", flat=True)) == [3]


def test_paid_requests_never_count_and_are_served_past_the_limit(api, limit, payer, offer):
    payments = [payer.pay(offer()) for _ in range(3)]  # three offers use the whole limit
    assert post(api).status_code == 429
    for payment in payments:
        assert post(api, payment=payment).status_code == 200


def test_samples_receipt_checks_and_offers_share_one_limit(api, limit, settings):
    settings.ROOT_URLCONF = "wiring.urls"
    assert api.get("/v1/sample/quote").status_code == 200
    assert api.post("/v1/receipt/verify", {"receipt": "x"}, format="json").status_code == 200
    assert api.get("/v1/sample/page").status_code == 200
    for path in ("/v1/sample/quote", "/v1/sample/missing"):
        refused = api.get(path)
        assert refused.status_code == 429
        assert refused["Retry-After"]
        # The HTML demo page's refusal is the API's JSON envelope too.
        assert refused.json()["error"]["code"] == "rate_limited"
    refused = api.post("/v1/receipt/verify", {"receipt": "x"}, format="json")
    assert refused.json()["error"]["code"] == "rate_limited"


def test_each_caller_address_has_its_own_limit(api, limit):
    for _ in range(3):
        post(api)
    assert post(api).status_code == 429
    other = api.post(
        "/v1/test/verify/quote", {"outcome": "real"}, format="json", REMOTE_ADDR="192.0.2.44"
    )
    assert other.status_code == 402


def test_refused_payments_count_as_unpaid(api, limit):
    for _ in range(3):
        assert post(api, payment="junk").status_code == 402
    assert post(api).status_code == 429


def test_past_the_limit_a_junk_payment_header_is_refused_after_the_body_check(api, limit):
    for _ in range(3):
        post(api)
    # The body is checked first, whatever the payment header: a bad one is a 400.
    junk = api.post(
        "/v1/test/verify/quote", {"outcome": "nonsense"}, format="json", HTTP_PAYMENT_SIGNATURE="x"
    )
    assert junk.status_code == 400
    # A good body with a payment that does not decode is an unpaid request: over the limit.
    refused = post(api, payment="x")
    assert refused.status_code == 429
    assert refused.json()["error"]["details"]["reason"] == "unpaid_requests"


def test_a_malformed_request_still_counts(api, limit):
    for _ in range(3):
        assert api.post("/v1/test/verify/quote", {"outcome": "?"}, format="json").status_code == 400
    assert post(api).status_code == 429


@pytest.mark.parametrize(
    ("rate", "expected"), [("300/m", (300, 60)), ("10/5s", (10, 5)), ("2/h", (2, 3600))]
)
def test_rates_read_as_count_and_window(rate, expected):
    assert parse_rate(rate) == expected


@pytest.mark.parametrize("rate", ["300", "m/300", "3/x", ""])
def test_a_bad_rate_is_refused(rate):
    with pytest.raises(ValueError):
        parse_rate(rate)


def test_the_limiter_counts_per_key_and_can_look_without_counting(limit):
    first = rate_limit(key="k1", rate="2/m", policy="p")
    assert (first.allowed, first.remaining, first.wait) == (True, 1, 0)
    assert rate_limit(key="k1", rate="2/m", policy="p", count=False).used == 1
    rate_limit(key="k1", rate="2/m", policy="p")
    over = rate_limit(key="k1", rate="2/m", policy="p")
    assert not over.allowed and 1 <= over.wait <= 60
    assert over.headers() == {
        "RateLimit-Policy": '"p";q=2;w=60',
        "RateLimit": f'"p";r=0;t={over.wait}',
    }
    assert rate_limit(key="k2", rate="2/m", policy="p").allowed


def test_unpaid_rate_comes_from_the_environment(monkeypatch):
    import environ
    from django.core.exceptions import ImproperlyConfigured

    from attest.config import request_rate

    monkeypatch.setenv("ATTEST_UNPAID_RATE", "50/m")
    assert request_rate(environ.Env(), "ATTEST_UNPAID_RATE", default="300/m") == "50/m"
    monkeypatch.setenv("ATTEST_UNPAID_RATE", "lots")
    with pytest.raises(ImproperlyConfigured):
        request_rate(environ.Env(), "ATTEST_UNPAID_RATE", default="300/m")
