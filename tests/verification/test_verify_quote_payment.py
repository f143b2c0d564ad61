"""verify/quote is paid through billing: offer, real payment, and the seed's charging rules."""

from __future__ import annotations

import pytest
from x402.http import decode_payment_response_header

from billing.models import LocalTransfer, PaymentClaim
from receipts.services import verify_receipt
from tests.billing.conftest import Payer, decode_offer
from tests.verification import dns_server as dns
from tests.verification.conftest import page, redirect

pytestmark = pytest.mark.django_db

ARTICLE = "<html><body><p>The committee said the review is overdue.</p></body></html>"


@pytest.fixture(autouse=True)
def paid_only(settings):
    settings.ATTEST_TRIAL_CALLS_PER_DAY = 0
    settings.X402_FACILITATOR_URL = ""
    settings.X402_NETWORK = "eip155:84532"


@pytest.fixture
def article(pages):
    pages.routes["/article"] = page(ARTICLE)
    return pages.url("/article")


def _post(api, payment: str | None = None, **body):
    headers = {"HTTP_PAYMENT_SIGNATURE": payment} if payment else {}
    return api.post("/v1/verify/quote", body, format="json", **headers)


def _pay(api, url: str) -> str:
    return Payer().pay(decode_offer(_post(api, url=url, quote="anything")))


def test_unpaid_call_gets_the_one_cent_offer_and_fetches_nothing(api, article, pages):
    response = _post(api, url=article, quote="the review is overdue")
    offer = decode_offer(response)
    assert offer.accepts[0].amount == "10000"
    assert offer.resource.url.endswith("/v1/verify/quote")
    assert "/article" not in pages.paths()


def test_bad_request_is_400_before_any_offer(api):
    response = _post(api, url="ftp://example.com/", quote="x")
    assert response.status_code == 400
    assert "PAYMENT-REQUIRED" not in response


def test_paid_call_is_served_settled_and_receipted_as_paid(api, article):
    response = _post(api, url=article, quote="the review is overdue", payment=_pay(api, article))
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["result"]["match"], body["tier"], body["rail"]) == ("exact", "paid", "x402")
    assert body["network"] == "eip155:84532"
    assert decode_payment_response_header(response["PAYMENT-RESPONSE"]).success
    check = verify_receipt(receipt=body["receipt"])
    assert check.valid
    assert check.claims["tier"] == "paid"
    assert LocalTransfer.objects.count() == 1


def test_a_404_page_result_is_charged(api, pages):
    missing = pages.url("/gone")  # the page server answers 404 for unknown paths
    response = _post(api, url=missing, quote="anything", payment=_pay(api, missing))
    assert response.status_code == 200
    assert response.json()["page"]["content_kind"] == "http_error"
    assert decode_payment_response_header(response["PAYMENT-RESPONSE"]).success
    assert PaymentClaim.objects.get().state == "settled"


def test_host_not_found_is_refused_before_any_offer(api, dns_server):
    response = _post(api, url="http://no-such-host.invalid/page", quote="x")
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "host_not_found"
    assert "PAYMENT-REQUIRED" not in response


def test_blocked_address_is_refused_before_any_offer(api, canary):
    response = _post(api, url=canary.url("/"), quote="canary")
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "blocked"
    assert "PAYMENT-REQUIRED" not in response
    assert canary.paths() == []


def test_host_not_found_is_not_charged_and_the_payment_pays_later(api, article, dns_server):
    payment = _pay(api, article)
    refused = _post(api, url="http://no-such-host.invalid/page", quote="x", payment=payment)
    assert refused.status_code == 422
    assert refused.json()["error"]["code"] == "host_not_found"
    assert not LocalTransfer.objects.exists()
    # The payment verified before the host was looked up (junk buys no lookup), and the
    # refusal freed it: released, never settled.
    claim = PaymentClaim.objects.get()
    assert (claim.state, claim.outcome) == (PaymentClaim.State.RELEASED, "host_not_found")
    assert _post(api, url=article, quote="overdue", payment=payment).status_code == 200


def test_a_failing_resolver_is_503_with_retry_after_and_the_payment_pays_later(
    api, article, dns_server
):
    dns_server.answers["flaky.example"] = dns.SERVFAIL
    payment = _pay(api, article)
    refused = _post(api, url="http://flaky.example/page", quote="x", payment=payment)
    assert refused.status_code == 503
    assert refused.json()["error"]["code"] == "dns_unavailable"
    assert int(refused["Retry-After"]) > 0
    assert "PAYMENT-REQUIRED" not in refused
    assert not LocalTransfer.objects.exists()
    assert PaymentClaim.objects.get().outcome == "dns_unavailable"  # verified, then freed
    assert _post(api, url=article, quote="overdue", payment=payment).status_code == 200


def test_robots_disallowed_is_refused_before_any_offer_and_not_charged(api, pages, article):
    pages.routes["/robots.txt"] = page(
        "User-agent: *\nDisallow: /secret", content_type="text/plain"
    )
    pages.routes["/secret"] = page("<p>secret</p>")
    url = pages.url("/secret")
    unpaid = _post(api, url=url, quote="secret")
    assert unpaid.status_code == 403
    assert "PAYMENT-REQUIRED" not in unpaid
    payment = _pay(api, article)
    refused = _post(api, url=url, quote="secret", payment=payment)
    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "robots_disallowed"
    assert not LocalTransfer.objects.exists()
    assert PaymentClaim.objects.get().outcome == "robots_disallowed"  # verified, then freed
    assert "/secret" not in pages.paths()
    assert _post(api, url=article, quote="overdue", payment=payment).status_code == 200


@pytest.mark.parametrize("location", ["file:///etc/passwd", "gopher://example.com/", "http:\\\\x"])
def test_a_redirect_to_another_scheme_after_payment_is_refused_and_not_charged(
    api, pages, location
):
    pages.routes["/moved"] = redirect(location)
    url = pages.url("/moved")
    response = _post(api, url=url, quote="anything", payment=_pay(api, url))
    assert response.status_code == 403, response.content
    error = response.json()["error"]
    assert (error["code"], error["details"]["reason"]) == ("blocked", "redirect_not_followed")
    assert error["details"]["field"] == "url"
    assert error["details"]["scheme"] == location.split(":")[0]
    assert "PAYMENT-RESPONSE" not in response
    assert LocalTransfer.objects.count() == 0
    assert PaymentClaim.objects.get().state != "settled"
