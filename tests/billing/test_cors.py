"""Browsers on any origin may call and pay: CORS from django-cors-headers, without cookies."""

from __future__ import annotations

import pytest

from tests.billing.conftest import post

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.billing.urls")]

ORIGIN = "https://agent.example"


def _listed(value: str) -> set[str]:
    return {item.strip().lower() for item in value.split(",")}


def test_preflight_allows_the_payment_and_credential_headers_from_any_origin(api):
    response = api.options(
        "/v1/test/verify/quote",
        HTTP_ORIGIN=ORIGIN,
        HTTP_ACCESS_CONTROL_REQUEST_METHOD="POST",
        HTTP_ACCESS_CONTROL_REQUEST_HEADERS="payment-signature, content-type",
    )
    assert response.status_code == 200
    assert response["Access-Control-Allow-Origin"] == "*"
    allowed = _listed(response["Access-Control-Allow-Headers"])
    assert {"payment-signature", "x-payment", "authorization", "content-type"} <= allowed
    assert "POST" in response["Access-Control-Allow-Methods"]
    assert "Access-Control-Allow-Credentials" not in response


def test_a_402_lets_a_browser_read_the_offer_and_the_wait_headers(api):
    response = post(api, origin=ORIGIN)
    assert response.status_code == 402
    assert response["Access-Control-Allow-Origin"] == "*"
    exposed = _listed(response["Access-Control-Expose-Headers"])
    assert {
        "payment-required",
        "payment-response",
        "x-payment-response",
        "retry-after",
        "x-request-id",
        "ratelimit",
        "ratelimit-policy",
    } <= exposed


def test_a_paid_answer_lets_a_browser_read_the_settlement(api, payer, offer):
    response = post(api, payment=payer.pay(offer()), origin=ORIGIN)
    assert response.status_code == 200
    assert response["Access-Control-Allow-Origin"] == "*"
    assert "payment-response" in _listed(response["Access-Control-Expose-Headers"])


@pytest.mark.urls("wiring.urls")
@pytest.mark.parametrize(
    ("method", "path"),
    [("get", "/v1/sample/quote"), ("get", "/.well-known/jwks.json"), ("get", "/healthz")],
)
def test_free_routes_answer_any_origin(api, method, path):
    response = getattr(api, method)(path, HTTP_ORIGIN=ORIGIN)
    assert response["Access-Control-Allow-Origin"] == "*"


@pytest.mark.urls("wiring.urls")
def test_the_admin_is_not_opened_to_other_origins(api):
    response = api.get("/admin/login/", HTTP_ORIGIN=ORIGIN)
    assert "Access-Control-Allow-Origin" not in response
