"""The 402 offer: x402 v2, the right amount per route, in the header and the error body."""

from __future__ import annotations

import pytest

from billing.models import Offer, Refusal
from tests.billing.conftest import NETWORK, PAY_TO, decode_offer, post

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.billing.urls")]

USDC_BASE_SEPOLIA = "0x036CbD53842c5426634e7929541eC2318f3dCF7e"


@pytest.mark.parametrize(
    ("route", "atomic_amount"),
    [
        ("verify/quote", "10000"),
        ("verify/quotes", "80000"),
        ("verify/citations", "100000"),
        ("fetch", "10000"),
    ],
)
def test_unpaid_call_gets_an_x402_v2_offer_priced_for_its_route(api, route, atomic_amount):
    response = post(api, route)
    offer = decode_offer(response)
    assert offer.x402_version == 2
    [accepted] = offer.accepts
    assert accepted.scheme == "exact"
    assert accepted.network == NETWORK
    assert accepted.asset == USDC_BASE_SEPOLIA
    assert accepted.amount == atomic_amount
    assert accepted.pay_to == PAY_TO
    assert accepted.extra["name"] == "USDC"
    # Well above the slowest route's work, so a signed offer never runs out mid-call.
    assert accepted.max_timeout_seconds >= 300
    assert offer.resource.url.endswith(f"/v1/{route}")


def test_offer_body_is_the_error_envelope_with_the_same_offer(api):
    response = post(api)
    error = response.json()["error"]
    assert error["code"] == "payment_required"
    assert error["details"]["reason"] == "payment_required"
    assert error["details"]["x402Version"] == 2
    header_offer = decode_offer(response)
    assert error["details"]["accepts"] == [
        a.model_dump(mode="json", by_alias=True, exclude_none=True) for a in header_offer.accepts
    ]
    assert error["details"]["accepts"][0]["amount"] == "10000"


def test_offer_is_recorded_in_the_ledger(api):
    post(api, "verify/citations")
    [row] = Offer.objects.all()
    assert (row.route, row.reason, row.amount, row.pay_to, row.caller, row.count) == (
        "verify/citations",
        "payment_required",
        "100000",
        PAY_TO,
        "127.0.0.1",
        1,
    )


def test_many_offers_to_one_caller_in_a_minute_write_one_counted_row(api):
    responses = [post(api, request_id=f"ask-{n}") for n in range(40)]
    assert {r.status_code for r in responses} == {402}
    rows = list(Offer.objects.order_by("minute"))
    # One row however many asked; a run that straddles a minute boundary sees two.
    assert len(rows) in (1, 2)
    assert sum(row.count for row in rows) == 40
    assert rows[-1].last_request_id == responses[-1]["X-Request-ID"]


def test_offers_are_counted_apart_per_caller_route_and_reason(api):
    post(api)
    post(api, "fetch")
    api.post("/v1/test/verify/quote", {"outcome": "real"}, format="json", REMOTE_ADDR="192.0.2.9")
    assert sorted(Offer.objects.values_list("route", "caller", "count")) == [
        ("fetch", "127.0.0.1", 1),
        ("verify/quote", "127.0.0.1", 1),
        ("verify/quote", "192.0.2.9", 1),
    ]


def test_refused_payments_write_one_counted_row_and_no_offer_row(api):
    for _ in range(5):
        assert post(api, payment="garbage").status_code == 402
    [refusal] = Refusal.objects.all()
    assert (refusal.reason, refusal.count, refusal.payer) == ("malformed_payment", 5, "")
    assert not Offer.objects.exists()


def test_bad_request_is_refused_before_the_offer(api):
    response = api.post("/v1/test/verify/quote", {"outcome": "nonsense"}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_request"
    assert "PAYMENT-REQUIRED" not in response
    assert not Offer.objects.exists()


@pytest.mark.parametrize("route", ["verify/quote", "verify/quotes", "verify/citations", "fetch"])
def test_the_offer_carries_the_bazaar_discovery_extension_from_the_schema(api, payer, route):
    from x402.extensions.bazaar import (
        extract_discovery_info,
        validate_discovery_extension,
        validate_discovery_extension_spec,
    )

    offer = decode_offer(post(api, route))
    bazaar = offer.extensions["bazaar"]
    assert validate_discovery_extension_spec(bazaar).valid
    assert validate_discovery_extension(bazaar).valid
    # The body and answer schemas are the service's own OpenAPI components, $refs written out.
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator(urlconf="wiring.urls").get_schema(request=None, public=True)
    operation = schema["paths"][f"/v1/{route}"]["post"]
    body_ref = operation["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    body = schema["components"]["schemas"][body_ref.rsplit("/", 1)[1]]
    declared = bazaar["schema"]["properties"]["input"]["properties"]["body"]
    assert declared["required"] == body["required"]
    assert set(declared["properties"]) == set(body["properties"])
    assert "$ref" not in str(bazaar)
    assert bazaar["info"]["input"]["method"] == "POST"
    # The SDK's client copies the extension into its payment; a facilitator reads it back.
    payment = payer.client.create_payment_payload(offer)
    info = extract_discovery_info(payment, payment.accepted)
    assert info is not None
    assert (info.method, info.resource_url) == ("POST", offer.resource.url)


def test_a_serving_process_builds_every_discovery_extension_before_its_first_request():
    """The schema behind the bazaar extension takes seconds to generate: the serving hooks
    (attest/wsgi.py runs them) build it, so no caller's first 402 waits for it."""
    from attest.registry import prepare_to_serve
    from billing import discovery
    from billing.pricing import PRICED_ROUTES

    discovery._openapi.cache_clear()
    discovery.route_discovery.cache_clear()
    prepare_to_serve()
    assert discovery._openapi.cache_info().currsize == 1
    assert discovery.route_discovery.cache_info().currsize == len(PRICED_ROUTES)
