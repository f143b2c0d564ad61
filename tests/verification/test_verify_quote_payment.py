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


def test_a_redirect_to_a_site_over_its_budget_after_payment_fails_the_call_uncharged(
    api, pages, article, second_site, settings
):
    settings.ATTEST_HOST_RATE = "1/h"
    second_site.routes["/article"] = page(ARTICLE)
    pages.routes["/moved"] = redirect(second_site.url("/article"))
    # The second site's one fetch this hour is spent by a paid call of its own.
    direct = second_site.url("/article")
    assert _post(api, url=direct, quote="overdue", payment=_pay(api, direct)).status_code == 200
    url = pages.url("/moved")
    response = _post(api, url=url, quote="overdue", payment=_pay(api, url))
    assert response.status_code == 429, response.content
    error = response.json()["error"]
    assert (error["code"], error["details"]["reason"]) == ("rate_limited", "host_rate_limited")
    assert error["details"]["host"] == f"127.0.0.1:{second_site.port}"
    assert 0 < int(response["Retry-After"]) <= 3600
    assert "PAYMENT-RESPONSE" not in response
    assert LocalTransfer.objects.count() == 1  # the direct call's, not this one
    assert second_site.paths().count("/article") == 1
    assert PaymentClaim.objects.filter(outcome="rate_limited").count() == 1


def test_a_site_that_answers_429_itself_is_a_charged_page_result(api, pages):
    pages.routes["/busy"] = page("<p>slow down</p>", status=429, headers={"Retry-After": "60"})
    url = pages.url("/busy")
    response = _post(api, url=url, quote="slow down", payment=_pay(api, url))
    assert response.status_code == 200, response.content
    answer = response.json()["page"]
    assert (answer["content_kind"], answer["http_status"]) == ("http_error", 429)
    assert LocalTransfer.objects.count() == 1


def test_a_crawl_delay_for_attestbot_paces_its_site_capped_at_ten_seconds(api, pages, article):
    pages.routes["/robots.txt"] = page(
        "User-agent: AttestBot\nCrawl-delay: 30\n", content_type="text/plain"
    )
    payments = [_pay(api, article) for _ in range(3)]  # the offers cost the site nothing
    answers = [_post(api, url=article, quote="overdue", payment=p) for p in payments]
    # One fetch per 10 s window (the delay, capped): at most two if a window ended between.
    assert [a.status_code for a in answers].count(429) >= 1, [a.content for a in answers]
    refused = next(a for a in answers if a.status_code == 429)
    assert refused.json()["error"]["details"]["reason"] == "host_rate_limited"
    assert 0 < int(refused["Retry-After"]) <= 10
    assert pages.paths().count("/article") == 3 - [a.status_code for a in answers].count(429)
    assert LocalTransfer.objects.count() == pages.paths().count("/article")
