"""POST /v1/verify/citations end to end against pages served on loopback: every seed rule."""

from __future__ import annotations

import hashlib
import threading

import pytest

from attest_core.normalise import normalise
from attest_core.passages import NOTE as PASSAGES_NOTE
from billing.models import LocalTransfer, PaymentClaim
from receipts.services import verify_receipt
from tests.billing.conftest import Payer, decode_offer
from tests.verification.conftest import page, redirect, send
from verification.engine.classify import SIGNAL_ADVICE
from verification.engine.html_text import html_text
from verification.engine.match import FUZZY_WORK_PER_CALL
from verification.models import RefusalTally, Verification

pytestmark = pytest.mark.django_db

ARTICLE = (
    "<html><head><title>Committee report</title></head><body><p>The committee said it was "
    "\u201cdeeply concerned\u201d about the results of the study.</p><p>The review is "
    "overdue.</p></body></html>"
)
OTHER = "<html><body><p>Water levels rose by four centimetres over the decade.</p></body></html>"


@pytest.fixture(autouse=True)
def paid_only(settings):
    settings.ATTEST_TRIAL_CALLS_PER_DAY = 0
    settings.X402_FACILITATOR_URL = ""
    settings.X402_NETWORK = "eip155:84532"


def _post(api, **body):
    """Post the batch, paying the offer (signed for real) if one comes back."""
    response = api.post("/v1/verify/citations", body, format="json")
    if response.status_code != 402:
        return response
    payment = Payer().pay(decode_offer(response))
    return api.post("/v1/verify/citations", body, format="json", HTTP_PAYMENT_SIGNATURE=payment)


def _charged() -> bool:
    return LocalTransfer.objects.exists()


def _text(markup: str) -> str:
    return normalise(html_text(markup).text).text


@pytest.fixture
def two_pages(pages):
    pages.routes["/article"] = page(ARTICLE)
    pages.routes["/other"] = page(OTHER)
    return pages.url("/article"), pages.url("/other")


# --- the answer ------------------------------------------------------------------------------


def test_results_follow_request_order_and_point_at_their_pages(api, pages, two_pages):
    article, other = two_pages
    citations = [
        {"url": article, "quote": "deeply concerned"},
        {"url": other, "quote": "Water levels rose by four centimetres"},
        {"url": article, "quote": "The review is overdue"},
        {"url": article, "quote": "The reviews is overdue."},
        {"url": other, "quote": "a sentence this page does not hold at all"},
    ]
    response = _post(api, citations=citations)
    assert response.status_code == 200, response.content
    body = response.json()
    assert set(body) == {
        "results",
        "pages",
        "summary",
        "receipt",
        "receipt_log_index",
        "tier",
        "rail",
        "network",
    }
    assert [r["page"] for r in body["results"]] == [0, 1, 0, 0, 1]
    assert [r["match"] for r in body["results"]] == ["exact", "exact", "exact", "fuzzy", "none"]
    assert [r["url"] for r in body["results"]] == [c["url"] for c in citations]
    assert body["summary"] == {"exact": 3, "fuzzy": 1, "none": 1, "failed": 0}
    text = _text(ARTICLE)
    first = body["results"][0]
    assert text[first["start"] : first["end"]] == "deeply concerned"
    assert first["content_kind"] == "real" and first["http_status"] == 200
    assert [p["requested_url"] for p in body["pages"]] == [article, other]
    assert body["pages"][0]["normalised_sha256"] == hashlib.sha256(text.encode()).hexdigest()
    assert body["pages"][0]["content_sha256"] == hashlib.sha256(ARTICLE.encode()).hexdigest()
    assert body["pages"][0]["title"] == "Committee report"
    assert body["pages"][0]["injection_flags"] == []
    assert body["tier"] == "paid"
    assert _charged()


def test_each_distinct_url_is_fetched_once(api, pages, two_pages):
    article, other = two_pages
    citations = [{"url": article, "quote": "deeply concerned"}] * 4
    citations += [{"url": other, "quote": "Water levels"}]
    assert _post(api, citations=citations).status_code == 200
    fetched = [p for p in pages.paths() if p != "/robots.txt"]
    assert sorted(fetched) == ["/article", "/other"]


def test_distinct_pages_are_fetched_at_the_same_time(api, pages):
    # Each page answers only once all ten are being served at once: fetched one after
    # another, the first would wait in vain and the barrier would break.
    together = threading.Barrier(10, timeout=10)
    broken = []

    def slow(h) -> None:
        try:
            together.wait()
        except threading.BrokenBarrierError:
            broken.append(h.path)
        send(h, 200, b"<p>slow page number</p>")

    paths = [f"/slow/{i}" for i in range(10)]
    for path in paths:
        pages.routes[path] = slow
    citations = [{"url": pages.url(path), "quote": "slow page"} for path in paths]
    response = _post(api, citations=citations, match="exact")
    assert response.status_code == 200
    assert response.json()["summary"]["exact"] == 10
    assert broken == []  # every page was being served while the others were


def test_the_receipt_signs_pages_and_citations_but_never_a_quote(api, two_pages):
    article, other = two_pages
    quotes = ["deeply concerned", "Water levels rose"]
    body = _post(
        api, citations=[{"url": article, "quote": quotes[0]}, {"url": other, "quote": quotes[1]}]
    ).json()
    check = verify_receipt(receipt=body["receipt"])
    assert check.valid
    claims = check.claims
    assert claims["route"] == "verify/citations"
    assert [p["url"] for p in claims["pages"]] == [article, other]
    signed_page = claims["pages"][0]
    for key in ("http_status", "content_kind", "content_sha256", "normalised_sha256"):
        assert signed_page[key] == body["pages"][0][key]
    assert signed_page["evidence"]["outcome"] == "ok"
    results = claims["results"]
    assert [r["page"] for r in results] == [0, 1]
    assert results[1]["quote_sha256"] == hashlib.sha256(quotes[1].encode()).hexdigest()
    assert [(r["match"], r["start"], r["end"]) for r in results] == [
        (b["match"], b["start"], b["end"]) for b in body["results"]
    ]
    for quote in quotes:
        assert quote not in str(claims)


def test_passages_mode_answers_passages_with_one_note_and_a_count(api, two_pages):
    article, other = two_pages
    body = _post(
        api,
        citations=[
            {"url": article, "quote": "The committee was worried about the study results"},
            {"url": other, "quote": "zebra giraffe antelope"},
        ],
        match="passages",
    ).json()
    assert [r["match"] for r in body["results"]] == ["passages", "none"]
    assert body["summary"] == {"exact": 0, "fuzzy": 0, "none": 1, "passages": 1, "failed": 0}
    assert body["note"] == PASSAGES_NOTE
    best = body["results"][0]
    assert best["scorer"] == "lexical-v2" and "note" not in best
    assert best["passages"][0]["start"] == best["start"]
    signed = verify_receipt(receipt=body["receipt"]).claims["results"][0]
    assert signed["scorer"] == "lexical-v2"
    assert [(p["start"], p["end"], p["score"]) for p in signed["passages"]] == [
        (p["start"], p["end"], p["score"]) for p in best["passages"]
    ]


def test_matches_on_a_pdf_carry_their_pages(api, pages):
    from tests.verification.pdfs import text_pdf

    pdf = text_pdf([["First page words."], ["The second page says hello there."]])
    pages.routes["/doc.pdf"] = page(pdf, content_type="application/pdf")
    body = _post(api, citations=[{"url": pages.url("/doc.pdf"), "quote": "hello there"}]).json()
    result = body["results"][0]
    assert (result["match"], result["pdf_page"], result["pdf_page_end"]) == ("exact", 2, 2)
    assert body["pages"][0]["pdf"] == {"page_count": 2, "pages_read": 2, "truncated": False}
    signed = verify_receipt(receipt=body["receipt"]).claims["results"][0]
    assert (signed["pdf_page"], signed["pdf_page_end"]) == (2, 2)


def test_a_bot_wall_page_is_a_result_read_before_the_match(api, pages):
    pages.routes["/wall"] = page(
        "<html><body>Just a moment...</body></html>",
        status=403,
        headers={"cf-mitigated": "challenge"},
    )
    body = _post(api, citations=[{"url": pages.url("/wall"), "quote": "anything"}]).json()
    assert body["results"][0]["content_kind"] == "bot_wall"
    assert body["results"][0]["match"] == "none"


# --- validation before payment ------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"citations": []}, "citations"),
        ({"citations": "x"}, "citations"),
        ({"citations": [{"url": "ftp://127.0.0.1/f", "quote": "a"}]}, "citations[0].url"),
        ({"citations": [{"quote": "a"}]}, "citations[0].url"),
        ({"citations": [{"url": "PAGE", "quote": 42}]}, "citations[0].quote"),
        ({"citations": [{"url": "PAGE", "quote": "a", "qoute": "b"}]}, "citations[0].qoute"),
        ({"match": "regex"}, "match"),
        ({"threshold": 0.3}, "threshold"),
        ({"match": "passages", "case_sensitive": True}, "case_sensitive"),
        ({"treshold": 0.5}, "treshold"),
    ],
)
def test_a_bad_request_is_400_naming_the_field_before_any_fetch(api, pages, change, field):
    pages.routes["/p"] = page("<p>a page</p>")
    body = {"citations": [{"url": pages.url("/p"), "quote": "a page"}], **change}
    for citation in body["citations"] if isinstance(body["citations"], list) else []:
        if citation.get("url") == "PAGE":
            citation["url"] = pages.url("/p")
    response = _post(api, **body)
    assert response.status_code == 400, response.content
    assert response.json()["error"]["details"]["field"] == field
    assert pages.seen == []


def test_the_first_bad_quote_names_its_citation(api, pages):
    pages.routes["/p"] = page("<p>a page</p>")
    url = pages.url("/p")
    citations = [{"url": url, "quote": "fine"}, {"url": url, "quote": "also fine"}]
    citations += [{"url": url, "quote": "x" * 1001}, {"url": url, "quote": "\u200b"}]
    response = _post(api, citations=citations)
    assert response.status_code == 400
    assert response.json()["error"]["details"]["field"] == "citations[2].quote"
    assert pages.seen == []


def test_a_claim_of_only_common_words_is_400_in_passages_mode(api, pages):
    pages.routes["/p"] = page("<p>a page</p>")
    citations = [{"url": pages.url("/p"), "quote": "the and of"}]
    response = _post(api, citations=citations, match="passages")
    assert response.status_code == 400
    assert response.json()["error"]["details"]["field"] == "citations[0].quote"


def test_more_than_ten_citations_is_400_invalid_request_naming_the_list(api, pages):
    pages.routes["/p"] = page("<p>a page</p>")
    citations = [{"url": pages.url("/p"), "quote": "a page"}] * 11
    response = _post(api, citations=citations)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid_request"
    assert error["details"] == {"field": "citations", "limit": 10, "count": 11}
    assert pages.seen == []
    assert _post(api, citations=citations[:10]).status_code == 200


def test_a_blocked_url_refuses_the_whole_batch_naming_it(api, pages, canary, two_pages):
    article, _ = two_pages
    citations = [{"url": article, "quote": "deeply"}, {"url": canary.url("/"), "quote": "x"}]
    response = _post(api, citations=citations)
    assert response.status_code == 403
    error = response.json()["error"]
    assert (error["code"], error["details"]["field"]) == ("blocked", "citations[1].url")
    assert canary.seen == []
    assert "/article" not in pages.paths()
    assert "PAYMENT-REQUIRED" not in response


def test_robots_disallow_refuses_the_whole_batch_before_payment(api, pages, two_pages):
    article, _ = two_pages
    pages.routes["/robots.txt"] = page("User-agent: *\nDisallow: /other", content_type="text/plain")
    citations = [{"url": article, "quote": "deeply"}, {"url": pages.url("/other"), "quote": "x"}]
    response = _post(api, citations=citations)
    assert response.status_code == 403
    error = response.json()["error"]
    assert (error["code"], error["details"]["field"]) == ("robots_disallowed", "citations[1].url")
    assert pages.paths() == ["/robots.txt"]
    assert not Verification.objects.exists()
    assert RefusalTally.objects.get().error_code == "robots_disallowed"


# --- dead domains -----------------------------------------------------------------------------

DEAD = "http://no-such-host.invalid/page"  # NXDOMAIN from the loopback DNS server


def test_a_dead_host_is_a_result_and_the_batch_is_charged(api, two_pages, dns_server):
    article, _ = two_pages
    citations = [{"url": DEAD, "quote": "anything"}, {"url": article, "quote": "deeply"}]
    response = _post(api, citations=citations)
    assert response.status_code == 200
    body = response.json()
    dead = body["results"][0]
    assert (dead["content_kind"], dead["http_status"], dead["match"]) == (
        "http_error",
        None,
        "none",
    )
    assert body["pages"][0]["signals"] == ["host_not_found"]
    # No server answered: the advice says the name did not resolve, not "the server
    # answered with an error".
    assert dead["advice"] == body["pages"][0]["advice"] == SIGNAL_ADVICE["host_not_found"]
    assert "resolve" in dead["advice"] and "answered" not in dead["advice"]
    assert body["results"][1]["match"] == "exact"
    assert _charged()
    assert Verification.objects.get().outcome == "answered"


def test_no_url_resolving_is_422_host_not_found_before_any_offer(api, dns_server):
    citations = [{"url": DEAD, "quote": "a"}, {"url": "http://no-such.invalid/", "quote": "b"}]
    response = _post(api, citations=citations)
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "host_not_found"
    assert "PAYMENT-REQUIRED" not in response


# --- partial failures ---------------------------------------------------------------------------


@pytest.fixture
def big_page(pages):
    """A 7-million-character page: two 1,000-character fuzzy searches fit the batch, not three."""
    size = 7_000_000
    pages.routes["/big.txt"] = page(b"lorem ipsum " * (size // 12), content_type="text/plain")
    return pages.url("/big.txt")


@pytest.fixture
def huge_page(pages):
    """Over one call's fuzzy budget for a 1,000-character quote."""
    size = FUZZY_WORK_PER_CALL // 1000 + 10_000
    pages.routes["/huge.txt"] = page(b"lorem ipsum " * (size // 12 + 1), content_type="text/plain")
    return pages.url("/huge.txt")


def test_a_quote_too_costly_fails_alone_and_the_batch_is_charged(api, huge_page, two_pages):
    article, _ = two_pages
    citations = [{"url": article, "quote": "deeply"}, {"url": huge_page, "quote": "q" * 1000}]
    response = _post(api, citations=citations)
    assert response.status_code == 200
    body = response.json()
    failed = body["results"][1]
    assert failed["error"]["code"] == "match_too_costly"
    assert failed["error"]["details"]["reason"] == "budget_exceeded"
    nulls = ("match", "score", "start", "end", "context", "occurrences")
    assert all(failed[key] is None for key in nulls)
    assert body["summary"] == {"exact": 1, "fuzzy": 0, "none": 0, "failed": 1}
    assert _charged()
    signed = verify_receipt(receipt=body["receipt"]).claims
    assert signed["extra"]["failed"] == [{"index": 1, "code": "match_too_costly"}]
    record = Verification.objects.get()
    assert (record.item_count, record.failed_count) == (2, 1)
    assert record.items[1]["error"] == "match_too_costly"


def test_the_shared_budget_is_spent_in_page_order_and_exact_still_found(api, big_page):
    quotes = ["a" * 1000, "b" * 1000, "c" * 1000, "lorem ipsum lorem"]
    body = _post(api, citations=[{"url": big_page, "quote": q} for q in quotes]).json()
    assert [r["match"] for r in body["results"]] == ["none", "none", None, "exact"]
    used_up = body["results"][2]["error"]
    assert used_up["details"]["reason"] == "budget_used_up"
    assert "shared" in used_up["message"]
    assert body["summary"]["failed"] == 1


def test_every_citation_failing_is_422_with_the_failed_list_and_not_charged(api, huge_page):
    citations = [{"url": huge_page, "quote": "q" * 1000}, {"url": huge_page, "quote": "r" * 1000}]
    response = _post(api, citations=citations)
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "match_too_costly"
    assert error["details"]["failed"] == [0, 1]
    assert not _charged()
    assert PaymentClaim.objects.get().state == "released"
    record = Verification.objects.get()
    assert (record.outcome, record.failed_count) == ("refused", 2)


# --- after payment -----------------------------------------------------------------------------


def test_robots_met_at_a_redirect_refuses_the_batch_uncharged(api, pages, two_pages):
    article, _ = two_pages
    pages.routes["/robots.txt"] = page(
        "User-agent: *\nDisallow: /secret", content_type="text/plain"
    )
    pages.routes["/jump"] = redirect(pages.url("/secret"))
    pages.routes["/secret"] = page("<p>secret</p>")
    citations = [{"url": article, "quote": "deeply"}, {"url": pages.url("/jump"), "quote": "x"}]
    response = _post(api, citations=citations)
    assert response.status_code == 403
    error = response.json()["error"]
    # Named as the same refusal is before payment: the citation whose URL led there.
    assert (error["code"], error["details"]["field"]) == ("robots_disallowed", "citations[1].url")
    assert "/secret" not in pages.paths()
    assert not _charged()
    assert PaymentClaim.objects.get().state == "released"
    assert Verification.objects.get().error_code == "robots_disallowed"


def test_a_redirect_inside_a_batch_takes_a_turn_of_its_sites_budget_before_it_is_fetched(
    api, pages, two_pages, second_site, settings
):
    # A batch's pages are fetched in threads, which cannot use the database: without Redis
    # (the counts in attest_ratecount) a redirect hop met there went uncounted, so a batch
    # could fetch a site past its budget, and again on every call; then it was counted
    # once the fetches ended, after the site had been fetched past its budget. The second
    # site is the canary: once over budget it must see no request at all.
    settings.ATTEST_HOST_RATE = "2/h"
    article, _ = two_pages
    second_site.routes["/article"] = page(ARTICLE)
    pages.routes["/jump"] = redirect(second_site.url("/article"))
    direct = second_site.url("/article")
    for _ in range(2):  # the second site's two fetches this hour
        assert _post(api, citations=[{"url": direct, "quote": "deeply"}]).status_code == 200
    citations = [{"url": article, "quote": "deeply"}, {"url": pages.url("/jump"), "quote": "x"}]
    response = _post(api, citations=citations)
    assert response.status_code == 429, response.content
    error = response.json()["error"]
    assert (error["code"], error["details"]["reason"]) == ("rate_limited", "host_rate_limited")
    assert error["details"]["host"] == f"127.0.0.1:{second_site.port}"
    assert 0 < int(response["Retry-After"]) <= 3600
    assert LocalTransfer.objects.count() == 2  # the direct calls', not the batch's
    assert PaymentClaim.objects.filter(outcome="rate_limited").count() == 1
    assert second_site.paths().count("/article") == 2  # the direct calls' fetches only


def test_a_redirect_to_a_dead_host_is_a_dead_page_result(api, pages, dns_server):
    pages.routes["/jump"] = redirect(DEAD)
    body = _post(api, citations=[{"url": pages.url("/jump"), "quote": "x"}]).json()
    assert body["results"][0]["content_kind"] == "http_error"
    assert body["results"][0]["http_status"] is None


# --- samples -------------------------------------------------------------------------------------


def test_the_citations_sample_runs_on_both_demo_pages(api, settings):
    response = api.get("/v1/sample/citations")
    assert response.status_code == 200
    body = response.json()
    assert body["tier"] == "sample"
    assert [r["page"] for r in body["results"]] == [0, 0, 1]
    assert [r["match"] for r in body["results"]] == ["fuzzy", "none", "none"]
    assert body["results"][2]["content_kind"] == "http_error"
    assert body["results"][2]["http_status"] == 404
    assert body["summary"] == {"exact": 0, "fuzzy": 1, "none": 2, "failed": 0}
    public = settings.ATTEST_PUBLIC_URL
    assert [p["requested_url"] for p in body["pages"]] == [
        f"{public}/v1/sample/page",
        f"{public}/v1/sample/missing",
    ]
    assert verify_receipt(receipt=body["receipt"]).claims["route"] == "sample/citations"


# --- trial and price -------------------------------------------------------------------------


def test_a_batch_costs_ten_cents(api, two_pages):
    article, _ = two_pages
    offer = decode_offer(
        api.post(
            "/v1/verify/citations",
            {"citations": [{"url": article, "quote": "deeply"}]},
            format="json",
        )
    )
    assert offer.accepts[0].amount == "100000"
    assert offer.resource.url.endswith("/v1/verify/citations")


def test_a_trial_covers_three_citations_and_no_more(api, two_pages, settings):
    settings.ATTEST_TRIAL_CALLS_PER_DAY = 5
    article, _ = two_pages
    three = [{"url": article, "quote": "deeply"}] * 3
    response = api.post("/v1/verify/citations", {"citations": three}, format="json")
    assert response.status_code == 200
    assert response.json()["tier"] == "trial"
    four = api.post("/v1/verify/citations", {"citations": three * 2}, format="json")
    assert four.status_code == 402
    assert four.json()["error"]["details"]["reason"] == "trial_too_large"
