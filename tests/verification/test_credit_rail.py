"""Every charging rule of the seeds on the credit rail, on the real verification routes: a
Bearer credential's balance (bought over x402 at POST /v1/credits) pays as a payment does,
drawn for page results and released for every refusal."""

from __future__ import annotations

import pytest

from billing.models import CreditAccount, CreditHold, MoneyEvent
from receipts.services import verify_receipt
from tests.billing.conftest import Payer, decode_offer
from tests.verification.conftest import page, redirect, trickle
from verification.capacity import queues
from verification.engine.match import FUZZY_WORK_PER_CALL

pytestmark = pytest.mark.django_db

ARTICLE = "<html><body><p>The committee said the review is overdue.</p></body></html>"


@pytest.fixture(autouse=True)
def paid_only(settings):
    settings.ATTEST_TRIAL_CALLS_PER_DAY = 0
    settings.X402_FACILITATOR_URL = ""
    settings.X402_NETWORK = "eip155:84532"


@pytest.fixture
def credential(api) -> str:
    """A new project with US$1.00 of credit, bought over x402 as a client would."""
    offer = decode_offer(api.post("/v1/credits", {"amount": "1.00"}, format="json"))
    paid = api.post(
        "/v1/credits",
        {"amount": "1.00"},
        format="json",
        HTTP_PAYMENT_SIGNATURE=Payer().pay(offer),
    )
    assert paid.status_code == 201, paid.content
    return paid.json()["credential"]


@pytest.fixture
def article(pages):
    pages.routes["/article"] = page(ARTICLE)
    return pages.url("/article")


def _post(api, credential: str, route: str = "verify/quote", **body):
    return api.post(f"/v1/{route}", body, format="json", HTTP_AUTHORIZATION=f"Bearer {credential}")


def _balance() -> int:
    return CreditAccount.objects.get().balance


def _released(outcome: str) -> bool:
    hold = CreditHold.objects.get()
    return (hold.state, hold.outcome) == ("released", outcome) and _balance() == 1_000_000


def test_a_credit_paid_quote_is_answered_receipted_and_drawn(api, credential, article):
    response = _post(api, credential, url=article, quote="the review is overdue")
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["result"]["match"], body["tier"], body["rail"]) == ("exact", "paid", "credit")
    assert "network" not in body and "PAYMENT-RESPONSE" not in response
    assert body["receipt_log_index"] >= 0
    check = verify_receipt(receipt=body["receipt"])
    assert check.valid and check.claims["tier"] == "paid"
    assert _balance() == 990_000
    assert MoneyEvent.objects.filter(kind="draw", route="verify/quote").count() == 1


def test_fetch_is_paid_from_credit(api, credential, article):
    response = _post(api, credential, "fetch", url=article)
    assert response.status_code == 200, response.content
    assert response.json()["rail"] == "credit"
    assert _balance() == 990_000


@pytest.mark.parametrize(
    "handler",
    [
        page("<p>gone</p>", status=404),
        page(
            "<html><body>Just a moment...</body></html>",
            status=403,
            headers={"cf-mitigated": "challenge"},
        ),
    ],
    ids=["http_404", "bot_wall"],
)
def test_a_404_or_a_bot_wall_is_a_page_result_and_drawn(api, credential, pages, handler):
    pages.routes["/p"] = handler
    response = _post(api, credential, url=pages.url("/p"), quote="anything")
    assert response.status_code == 200, response.content
    assert response.json()["page"]["content_kind"] in ("http_error", "bot_wall")
    assert _balance() == 990_000


def test_a_timeout_is_a_page_result_and_drawn(api, credential, pages, settings):
    settings.ATTEST_FETCH_DEADLINE = 1.0
    pages.routes["/slow"] = trickle(interval=0.05)
    response = _post(api, credential, url=pages.url("/slow"), quote="a")
    assert response.json()["page"]["content_kind"] == "timeout"
    assert _balance() == 990_000


def test_a_bad_request_is_400_and_holds_nothing(api, credential):
    response = _post(api, credential, url="ftp://example.com/", quote="x")
    assert response.status_code == 400
    assert not CreditHold.objects.exists() and _balance() == 1_000_000


def test_host_not_found_is_released(api, credential, dns_server):
    response = _post(api, credential, url="http://no-such-host.invalid/page", quote="x")
    assert (response.status_code, response.json()["error"]["code"]) == (422, "host_not_found")
    assert _released("host_not_found")


def test_robots_disallowed_is_released_and_the_page_never_fetched(api, credential, pages):
    pages.routes["/robots.txt"] = page(
        "User-agent: *\nDisallow: /secret", content_type="text/plain"
    )
    pages.routes["/secret"] = page("<p>secret</p>")
    response = _post(api, credential, url=pages.url("/secret"), quote="secret")
    assert response.json()["error"]["code"] == "robots_disallowed"
    assert "/secret" not in pages.paths()
    assert _released("robots_disallowed")


def test_robots_met_after_a_redirect_is_released(api, credential, pages):
    pages.routes["/robots.txt"] = page(
        "User-agent: *\nDisallow: /secret", content_type="text/plain"
    )
    pages.routes["/jump"] = redirect(pages.url("/secret"))
    pages.routes["/secret"] = page("<p>secret</p>")
    response = _post(api, credential, url=pages.url("/jump"), quote="secret")
    assert response.status_code == 403, response.content
    assert response.json()["error"]["code"] == "robots_disallowed"
    assert "/secret" not in pages.paths()
    assert _released("robots_disallowed")


def test_match_too_costly_is_released(api, credential, pages):
    size = FUZZY_WORK_PER_CALL // 1000 + 10_000
    pages.routes["/huge.txt"] = page(b"lorem ipsum " * (size // 12 + 1), content_type="text/plain")
    response = _post(api, credential, url=pages.url("/huge.txt"), quote="q" * 1000)
    assert (response.status_code, response.json()["error"]["code"]) == (422, "match_too_costly")
    assert _released("match_too_costly")


def test_a_full_match_queue_holds_nothing(api, credential, article, settings):
    settings.ATTEST_MATCH_SLOTS, settings.ATTEST_MATCH_QUEUE = 1, 0
    with queues.MATCH_QUEUE.join():
        response = _post(
            api, credential, "verify/citations", citations=[{"url": article, "quote": "overdue"}]
        )
    assert (response.status_code, response.json()["error"]["code"]) == (503, "over_capacity")
    assert _balance() == 1_000_000
    assert not CreditHold.objects.filter(state__in=["held", "drawn"]).exists()


def test_a_batch_draws_ten_cents_once(api, credential, article, pages):
    pages.routes["/other"] = page("<p>Another page entirely.</p>")
    citations = [{"url": article, "quote": "overdue"}, {"url": pages.url("/other"), "quote": "x"}]
    response = _post(api, credential, "verify/citations", citations=citations)
    assert response.status_code == 200, response.content
    assert response.json()["rail"] == "credit"
    assert _balance() == 900_000
    assert MoneyEvent.objects.filter(kind="draw").count() == 1


def test_a_failed_batch_draws_nothing(api, credential, pages):
    size = FUZZY_WORK_PER_CALL // 1000 + 10_000
    pages.routes["/huge.txt"] = page(b"lorem ipsum " * (size // 12 + 1), content_type="text/plain")
    huge = pages.url("/huge.txt")
    citations = [{"url": huge, "quote": "q" * 1000}, {"url": huge, "quote": "r" * 1000}]
    response = _post(api, credential, "verify/citations", citations=citations)
    assert (response.status_code, response.json()["error"]["code"]) == (422, "match_too_costly")
    assert _released("match_too_costly")


def test_quotes_on_one_page_draw_its_price(api, credential, article):
    response = _post(api, credential, "verify/quotes", url=article, quotes=["overdue", "x"])
    assert response.status_code == 200, response.content
    assert _balance() == 920_000


def test_uncharged_refusals_after_the_hold_use_the_callers_bucket(api, credential, dns_server):
    """Six refusals after the hold (the bucket's size), then 429 before any lookup."""
    size = queues.UNCHARGED_FAILURES.size
    for _ in range(size):
        refused = _post(api, credential, url="http://no-such-host.invalid/page", quote="x")
        assert refused.json()["error"]["code"] == "host_not_found"
    looked_up = len(dns_server.queries)
    over = _post(api, credential, url="http://no-such-host.invalid/page", quote="x")
    assert over.status_code == 429, over.content
    assert over.json()["error"]["details"]["reason"] == "uncharged_failures"
    assert len(dns_server.queries) == looked_up  # refused before the host was looked up
    assert _balance() == 1_000_000
    assert CreditHold.objects.filter(state="released").count() == size + 1


def test_a_paid_answer_is_rendered_once(api, credential, article, monkeypatch):
    from verification.api.serializers import VerifyQuoteOutput

    renders = []
    original = VerifyQuoteOutput.to_representation

    def counted(self, instance):
        renders.append(instance)
        return original(self, instance)

    monkeypatch.setattr(VerifyQuoteOutput, "to_representation", counted)
    response = _post(api, credential, url=article, quote="the review is overdue")
    assert response.status_code == 200
    assert len(renders) == 1 and renders[0]["rail"] == "credit"
