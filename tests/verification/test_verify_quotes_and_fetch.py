"""POST /v1/verify/quotes (many quotes, one page) and POST /v1/fetch (a page's text, signed)."""

from __future__ import annotations

import hashlib

import pytest

from attest_core.normalise import normalise
from billing.models import LocalTransfer
from receipts.services import verify_receipt
from tests.billing.conftest import Payer, decode_offer
from tests.verification.conftest import page
from tests.verification.pdfs import text_pdf
from verification.engine.html_text import html_text
from verification.engine.match import FUZZY_WORK_PER_CALL

pytestmark = pytest.mark.django_db

ARTICLE = (
    "<html><head><title>Minutes</title></head><body><p>The board approved the budget.</p>"
    "<p>Members asked for a \u201cfull audit\u201d of the harbour accounts.</p></body></html>"
)


@pytest.fixture(autouse=True)
def paid_only(settings):
    settings.ATTEST_TRIAL_CALLS_PER_DAY = 0
    settings.X402_FACILITATOR_URL = ""
    settings.X402_NETWORK = "eip155:84532"


def _post(api, route: str, **body):
    response = api.post(f"/v1/{route}", body, format="json")
    if response.status_code != 402:
        return response
    payment = Payer().pay(decode_offer(response))
    return api.post(f"/v1/{route}", body, format="json", HTTP_PAYMENT_SIGNATURE=payment)


@pytest.fixture
def article(pages):
    pages.routes["/minutes"] = page(ARTICLE)
    return pages.url("/minutes")


# --- verify/quotes ---------------------------------------------------------------------------


def test_quotes_are_answered_in_order_on_one_fetched_page(api, pages, article):
    quotes = ["approved the budget", 'a "full audit"', "The bord approved the budget.", "absent"]
    response = _post(api, "verify/quotes", url=article, quotes=quotes)
    assert response.status_code == 200, response.content
    body = response.json()
    assert [r["match"] for r in body["results"]] == ["exact", "exact", "fuzzy", "none"]
    assert body["summary"] == {"exact": 2, "fuzzy": 1, "none": 1, "failed": 0}
    assert body["page"]["title"] == "Minutes"
    assert body["tier"] == "paid"
    text = normalise(html_text(ARTICLE).text).text
    first = body["results"][0]
    assert text[first["start"] : first["end"]] == "approved the budget"
    assert first["normalised_sha256"] == hashlib.sha256(text.encode()).hexdigest()
    assert [p for p in pages.paths() if p != "/robots.txt"] == ["/minutes"]
    claims = verify_receipt(receipt=body["receipt"]).claims
    assert claims["route"] == "verify/quotes"
    assert len(claims["pages"]) == 1 and len(claims["results"]) == 4
    assert claims["results"][1]["quote_sha256"] == hashlib.sha256(quotes[1].encode()).hexdigest()


def test_verify_quotes_costs_eight_cents(api, article):
    response = api.post("/v1/verify/quotes", {"url": article, "quotes": ["x"]}, format="json")
    assert decode_offer(response).accepts[0].amount == "80000"


def test_twenty_quotes_are_allowed_and_twenty_one_is_invalid_request(api, pages, article):
    assert _post(api, "verify/quotes", url=article, quotes=["budget"] * 20).status_code == 200
    pages.seen.clear()
    response = _post(api, "verify/quotes", url=article, quotes=["budget"] * 21)
    # A list over its size is malformed (citation_limit is resolve's "source too large").
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid_request"
    assert error["details"] == {"field": "quotes", "limit": 20, "count": 21}
    assert pages.seen == []


def test_a_bad_quote_is_named_by_its_index(api, pages, article):
    response = _post(api, "verify/quotes", url=article, quotes=["a", "b", "c", "\u200b"])
    assert response.status_code == 400
    assert response.json()["error"]["details"]["field"] == "quotes[3]"
    assert pages.seen == []


def test_the_quotes_share_twice_one_calls_fuzzy_budget(api, pages):
    size = 7_000_000  # two 1,000-character searches fit in the batch's budget, not three
    pages.routes["/big.txt"] = page(b"lorem ipsum " * (size // 12), content_type="text/plain")
    quotes = ["a" * 1000, "b" * 1000, "c" * 1000, "ipsum lorem"]
    body = _post(api, "verify/quotes", url=pages.url("/big.txt"), quotes=quotes).json()
    assert [r["match"] for r in body["results"]] == ["none", "none", None, "exact"]
    assert body["results"][2]["error"]["details"]["reason"] == "budget_used_up"
    assert body["summary"]["failed"] == 1


def test_every_quote_failing_is_422_and_not_charged(api, pages):
    size = FUZZY_WORK_PER_CALL // 1000 + 10_000
    pages.routes["/huge.txt"] = page(b"lorem ipsum " * (size // 12 + 1), content_type="text/plain")
    response = _post(api, "verify/quotes", url=pages.url("/huge.txt"), quotes=["q" * 1000])
    assert response.status_code == 422
    assert response.json()["error"]["details"]["failed"] == [0]
    assert not LocalTransfer.objects.exists()


def test_a_host_that_does_not_resolve_is_422_for_verify_quotes(api, dns_server):
    response = _post(api, "verify/quotes", url="http://no-such-host.invalid/", quotes=["x"])
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "host_not_found"
    assert response.json()["error"]["details"]["hosts"] == ["no-such-host.invalid"]


@pytest.mark.parametrize("route", ["verify/quotes", "verify/citations"])
def test_a_url_at_the_length_limit_that_canonicalises_longer_is_judged_not_a_500(api, route):
    # "0" is 0.0.0.0 and the path "/" is added: the canonical URL is past 2,048 characters.
    url = "HTTP://0?" + "0" * (2048 - len("HTTP://0?"))
    body = {"url": url, "quotes": ["x"]} if route == "verify/quotes" else {}
    if route == "verify/citations":
        body = {"citations": [{"url": url, "quote": "x"}]}
    response = api.post(f"/v1/{route}", body, format="json")
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "blocked"


# --- fetch -----------------------------------------------------------------------------------


def test_fetch_returns_the_normalised_text_the_receipt_signs(api, article):
    response = _post(api, "fetch", url=article)
    assert response.status_code == 200, response.content
    body = response.json()
    text = normalise(html_text(ARTICLE).text).text
    assert body["text"] == text
    assert body["normalised_sha256"] == hashlib.sha256(text.encode()).hexdigest()
    assert body["page"]["content_kind"] == "real"
    assert body["tier"] == "paid"
    check = verify_receipt(receipt=body["receipt"], text=body["text"])
    assert check.valid
    assert check.claims["route"] == "fetch"
    assert check.checks["normalised_sha256"] is True
    assert check.claims["results"] == []


def test_fetch_costs_one_cent_and_a_404_page_is_charged(api, pages):
    offer = decode_offer(api.post("/v1/fetch", {"url": pages.url("/gone")}, format="json"))
    assert offer.accepts[0].amount == "10000"
    body = _post(api, "fetch", url=pages.url("/gone")).json()
    assert body["page"]["content_kind"] == "http_error"
    assert LocalTransfer.objects.count() == 1


def test_fetch_of_a_pdf_gives_each_pages_span_in_the_text(api, pages):
    pdf = text_pdf([["First page text."], ["Second page text."], ["Third."]])
    pages.routes["/doc.pdf"] = page(pdf, content_type="application/pdf")
    body = _post(api, "fetch", url=pages.url("/doc.pdf")).json()
    text = body["text"]
    spans = body["pdf_pages"]
    assert [text[start:end] for start, end in spans] == [
        "First page text.",
        "Second page text.",
        "Third.",
    ]
    assert body["page"]["pdf"]["page_count"] == 3


def test_fetch_refuses_an_unknown_field_and_a_blocked_address(api, canary):
    response = _post(api, "fetch", url=canary.url("/"), quote="x")
    assert response.status_code == 400
    assert response.json()["error"]["details"]["field"] == "quote"
    blocked = _post(api, "fetch", url=canary.url("/"))
    assert blocked.status_code == 403
    assert canary.seen == []
