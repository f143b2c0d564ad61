"""Staff find failed batches, each quote's outcome and the payment; the schema lists the routes."""

from __future__ import annotations

import pytest

from billing.models import PaymentClaim, Settlement
from tests.billing.conftest import Payer, decode_offer
from tests.verification.conftest import page
from verification.engine.match import FUZZY_WORK_PER_CALL
from verification.models import Verification

pytestmark = pytest.mark.django_db


@pytest.fixture
def paid(settings):
    settings.ATTEST_TRIAL_CALLS_PER_DAY = 0
    settings.X402_FACILITATOR_URL = ""


def _paid_batch(api, citations):
    body = {"citations": citations}
    offer = decode_offer(api.post("/v1/verify/citations", body, format="json"))
    payment = Payer().pay(offer)
    return api.post("/v1/verify/citations", body, format="json", HTTP_PAYMENT_SIGNATURE=payment)


@pytest.fixture
def batches(api, pages, paid):
    """One charged batch with a failed citation, one clean batch, one verify/quote record."""
    size = FUZZY_WORK_PER_CALL // 1000 + 10_000
    pages.routes["/huge.txt"] = page(b"lorem ipsum " * (size // 12 + 1), content_type="text/plain")
    pages.routes["/p"] = page("<p>a fine page</p>")
    failed = _paid_batch(
        api,
        [
            {"url": pages.url("/p"), "quote": "fine"},
            {"url": pages.url("/huge.txt"), "quote": "q" * 1000},
        ],
    )
    clean = _paid_batch(api, [{"url": pages.url("/p"), "quote": "fine"}])
    assert (failed.status_code, clean.status_code) == (200, 200)
    return (
        Verification.objects.get(request_id=failed["X-Request-ID"]),
        Verification.objects.get(request_id=clean["X-Request-ID"]),
    )


def test_batches_with_a_failed_citation_can_be_filtered(admin_client, batches):
    failed, clean = batches
    listing = admin_client.get("/admin/verification/batch/?failed_items=any")
    assert listing.status_code == 200
    assert f"/admin/verification/batch/{failed.pk}/change/".encode() in listing.content
    assert f"/admin/verification/batch/{clean.pk}/change/".encode() not in listing.content


def test_a_batch_shows_each_citations_outcome_and_links_its_payment(admin_client, batches):
    failed, _ = batches
    detail = admin_client.get(f"/admin/verification/batch/{failed.pk}/change/")
    assert detail.status_code == 200
    assert b"match_too_costly" in detail.content
    assert b"<td>exact</td>" in detail.content
    claim = PaymentClaim.objects.get(request_id=failed.request_id)
    settlement = Settlement.objects.get(claim=claim)
    assert f"/admin/billing/paymentclaim/{claim.pk}/change/".encode() in detail.content
    assert f"/admin/billing/settlement/{settlement.pk}/change/".encode() in detail.content


def test_refused_or_uncharged_batches_can_be_filtered(admin_client, pages, batches):
    _, clean = batches
    refused = Verification.objects.create(
        route="verify/citations",
        request_id="refused-after-payment",
        tier="paid",
        outcome="refused",
        status_code=503,
        error_code="over_capacity",
        mode="fuzzy",
        requested_url=pages.url("/p"),
        total_ms=1.0,
    )
    listing = admin_client.get("/admin/verification/batch/?charged=no")
    assert f"/admin/verification/batch/{refused.pk}/change/".encode() in listing.content
    assert f"/admin/verification/batch/{clean.pk}/change/".encode() not in listing.content


def test_refusal_tallies_are_shown_read_only(admin_client, api, dns_server):
    api.post("/v1/verify/quote", {"url": "http://no-such.invalid/", "quote": "x"}, format="json")
    listing = admin_client.get("/admin/verification/refusaltally/")
    assert listing.status_code == 200
    assert b"host_not_found" in listing.content
    assert admin_client.get("/admin/verification/refusaltally/add/").status_code == 403


def test_openapi_lists_the_batch_routes_and_their_errors(api):
    paths = api.get("/v1/openapi.json").json()["paths"]
    for route in ("/v1/verify/citations", "/v1/verify/quotes", "/v1/fetch"):
        assert route in paths
    citations = paths["/v1/verify/citations"]["post"]["responses"]
    # 409: a payment-identifier already used for another request (billing's); 401: a Bearer
    # credential that pays for no one (billing's too).
    documented = {
        "200",
        "400",
        "401",
        "402",
        "403",
        "409",
        "413",
        "415",
        "422",
        "429",
        "500",
        "501",
        "503",
    }
    assert set(citations) == documented
    for code in ("host_not_found", "match_too_costly"):
        assert code in citations["422"]["description"]
    # A list over its size is a 400 like every malformed request, never citation_limit.
    assert "citation_limit" not in citations["422"]["description"]
    assert "More members than the route allows" in citations["400"]["description"]
    schemas = api.get("/v1/openapi.json").json()["components"]["schemas"]
    for schema, field, size in (
        ("VerifyCitationsInputRequest", "citations", 10),
        ("VerifyQuotesInputRequest", "quotes", 20),
    ):
        member = schemas[schema]["properties"][field]
        assert member["maxItems"] == size
        assert "more is 400 invalid_request" in member["description"]
    assert "uncharged_failures" in citations["429"]["description"]
    assert "match_queue_full" in citations["503"]["description"]
    assert "pdf_queue_full" in citations["503"]["description"]
    assert "pdf_queue_full" in paths["/v1/verify/quote"]["post"]["responses"]["503"]["description"]
    assert "/v1/sample/citations" in paths
