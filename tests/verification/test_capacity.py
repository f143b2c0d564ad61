"""The shared capacity limits: match queue, PDF queue and the bucket of uncharged failures."""

from __future__ import annotations

import multiprocessing
import random

import pytest

from attest.errors import OverCapacity, RateLimited
from attest.shared_state import in_redis
from billing.models import LocalTransfer, PaymentClaim, TrialUse
from tests.billing.conftest import Payer, decode_offer
from tests.verification.conftest import page, send
from tests.verification.pdfs import text_pdf
from verification.capacity import limits, pdf_pool, queues
from verification.engine.match import FUZZY_WORK_PER_CALL
from verification.engine.pdf_text import PdfText

# --- the pure rules -----------------------------------------------------------------------

SIZES = limits.QueueLimits(running=2, waiting=1)


def test_a_queue_takes_running_plus_waiting_places_and_no_more():
    holders = limits.queue_join([], ["a", "b"], now=0, lease=10, limits=SIZES)
    holders = limits.queue_join(holders, ["c"], now=0, lease=10, limits=SIZES)
    assert [h[0] for h in holders] == ["a", "b", "c"]
    assert limits.queue_join(holders, ["d"], now=1, lease=10, limits=SIZES) is None
    assert not limits.queue_has_room(holders, now=1, limits=SIZES)
    # Places are taken all or none.
    assert limits.queue_join(holders[:1], ["x", "y", "z"], now=1, lease=10, limits=SIZES) is None


def test_the_first_holders_work_and_the_next_moves_up_when_one_leaves():
    holders = limits.queue_join([], ["a", "b", "c"], now=0, lease=10, limits=SIZES)
    assert limits.queue_turns(holders, ["a", "b", "c"], now=1, limits=SIZES) == {"a", "b"}
    holders = limits.queue_leave(holders, ["a"], now=1)
    assert limits.queue_turns(holders, ["c"], now=1, limits=SIZES) == {"c"}


def test_a_place_whose_lease_ran_out_lapses():
    holders = limits.queue_join([], ["dead", "b", "c"], now=0, lease=10, limits=SIZES)
    holders[0][1] = 5  # the holder's process died; its lease ends at t=5
    assert limits.queue_turns(holders, ["c"], now=6, limits=SIZES) == {"c"}
    assert limits.queue_has_room(holders, now=6, limits=SIZES)


def test_a_request_takes_the_places_that_are_free_and_none_when_the_queue_is_full():
    holders = limits.queue_join([], ["a", "b"], now=0, lease=10, limits=SIZES)
    joined, taken = limits.queue_join_some(holders, ["x", "y"], now=1, lease=10, limits=SIZES)
    assert (taken, [h[0] for h in joined]) == (["x"], ["a", "b", "x"])
    assert limits.queue_join_some(joined, ["z"], now=1, lease=10, limits=SIZES) is None


def test_a_renewed_place_outlives_its_first_lease():
    holders = limits.queue_join([], ["a", "b"], now=0, lease=10, limits=SIZES)
    holders = limits.queue_renew(holders, ["a"], now=8, lease=10)
    assert [h[0] for h in limits.queue_live(holders, now=12)] == ["a"]


RULE = limits.BucketRule(size=6, refill_seconds=10)


def test_the_bucket_has_six_places_and_refills_one_every_ten_seconds():
    state = None
    for _ in range(6):
        state = limits.bucket_take(state, now=100, rule=RULE)
        assert state is not None
    assert limits.bucket_take(state, now=100, rule=RULE) is None
    assert limits.bucket_wait(state, now=100, rule=RULE) == 10
    assert limits.bucket_wait(state, now=104, rule=RULE) == 6
    assert limits.bucket_take(state, now=109.9, rule=RULE) is None
    later = limits.bucket_take(state, now=110, rule=RULE)
    assert later is not None and limits.bucket_take(later, now=110, rule=RULE) is None
    assert limits.bucket_level(state, now=1000, rule=RULE) == 6  # never more than six


def test_a_place_given_back_is_free_at_once():
    state = limits.bucket_take(None, now=0, rule=RULE)
    assert limits.bucket_level(state, now=0, rule=RULE) == 5
    assert (
        limits.bucket_level(limits.bucket_give_back(state, now=0, rule=RULE), now=0, rule=RULE) == 6
    )


# --- the routes ------------------------------------------------------------------------------


@pytest.fixture
def trial(settings):
    settings.ATTEST_TRIAL_CALLS_PER_DAY = 1000
    settings.X402_FACILITATOR_URL = ""
    return settings


@pytest.fixture
def small_queues(settings):
    settings.ATTEST_MATCH_SLOTS = 1
    settings.ATTEST_MATCH_QUEUE = 0
    settings.ATTEST_PDF_READERS = 1
    settings.ATTEST_PDF_QUEUE = 0
    return settings


@pytest.fixture
def huge(pages):
    size = FUZZY_WORK_PER_CALL // 1000 + 10_000
    pages.routes["/huge.txt"] = page(b"lorem ipsum " * (size // 12 + 1), content_type="text/plain")
    return pages.url("/huge.txt")


def _citations(api, citations, **headers):
    return api.post("/v1/verify/citations", {"citations": citations}, format="json", **headers)


@pytest.mark.django_db
def test_six_uncharged_failed_batches_a_minute_then_429_before_any_fetch(
    api, pages, trial, huge, monkeypatch
):
    monkeypatch.setattr(queues, "clock", lambda: 1_000_000.0)  # no refill meanwhile
    failing = [{"url": huge, "quote": "q" * 1000}]
    for _ in range(6):
        assert _citations(api, failing).status_code == 422
    pages.seen.clear()
    refused = _citations(api, failing)
    assert refused.status_code == 429
    error = refused.json()["error"]
    assert (error["code"], error["details"]["reason"]) == ("rate_limited", "uncharged_failures")
    assert 1 <= int(refused["Retry-After"]) <= 10
    assert "PAYMENT-REQUIRED" not in refused
    assert pages.seen == []
    assert not TrialUse.objects.exists()


@pytest.mark.django_db
def test_charged_batches_never_use_the_bucket_up(api, pages, trial):
    pages.routes["/p"] = page("<p>a fine page</p>")
    for _ in range(8):
        assert _citations(api, [{"url": pages.url("/p"), "quote": "fine"}]).status_code == 200


@pytest.mark.django_db
def test_running_batches_hold_their_places(api, pages, trial):
    pages.routes["/p"] = page("<p>a fine page</p>")
    for _ in range(6):  # six batches of this caller still running
        queues.failures_take(client_ip="127.0.0.1")
    response = _citations(api, [{"url": pages.url("/p"), "quote": "fine"}])
    assert response.status_code == 429
    assert pages.seen == []
    queues.failures_give_back(client_ip="127.0.0.1")
    assert _citations(api, [{"url": pages.url("/p"), "quote": "fine"}]).status_code == 200


@pytest.mark.django_db
def test_the_last_place_taken_meanwhile_is_429_after_the_check(trial):
    for _ in range(5):
        queues.failures_take(client_ip="192.0.2.7")
    queues.failures_ensure_room(client_ip="192.0.2.7")  # one place left at the check
    queues.failures_take(client_ip="192.0.2.7")  # a parallel batch takes it
    with pytest.raises(RateLimited) as refused:
        queues.failures_take(client_ip="192.0.2.7")
    assert refused.value.details == {"reason": "uncharged_failures"}
    assert refused.value.retry_after >= 1


@pytest.mark.django_db
def test_a_full_match_queue_is_503_before_the_offer(api, pages, small_queues, settings):
    settings.ATTEST_TRIAL_CALLS_PER_DAY = 0
    pages.routes["/p"] = page("<p>a fine page</p>")
    batch = [{"url": pages.url("/p"), "quote": "fine"}]
    with queues.MATCH_QUEUE.join():
        refused = _citations(api, batch)
        quotes = api.post(
            "/v1/verify/quotes", {"url": pages.url("/p"), "quotes": ["x"]}, format="json"
        )
    assert refused.status_code == 503
    error = refused.json()["error"]
    assert (error["code"], error["details"]["reason"]) == ("over_capacity", "match_queue_full")
    assert refused["Retry-After"] == "3"
    assert "PAYMENT-REQUIRED" not in refused
    assert quotes.status_code == 503
    assert pages.seen == []
    assert _citations(api, batch).status_code == 402  # room again: the offer comes


@pytest.mark.django_db
def test_a_full_pdf_queue_is_503_and_not_charged(api, pages, small_queues, trial):
    pages.routes["/doc.pdf"] = page(text_pdf([["Some words."]]), content_type="application/pdf")
    pages.routes["/p"] = page("<p>a fine page</p>")
    with pdf_pool.PDF_QUEUE.join():
        quote = api.post(
            "/v1/verify/quote", {"url": pages.url("/doc.pdf"), "quote": "words"}, format="json"
        )
        batch = _citations(
            api,
            [
                {"url": pages.url("/p"), "quote": "fine"},
                {"url": pages.url("/doc.pdf"), "quote": "words"},
            ],
        )
        html = api.post("/v1/verify/quote", {"url": pages.url("/p"), "quote": "a"}, format="json")
    for refused in (quote, batch):
        assert refused.status_code == 503
        assert refused.json()["error"]["details"]["reason"] == "pdf_queue_full"
        assert refused["Retry-After"] == "5"
    assert html.status_code == 200  # pages that are not PDFs are not held up
    assert TrialUse.objects.count() == 1  # only the charged HTML answer spent a trial call
    ok = api.post(
        "/v1/verify/quote", {"url": pages.url("/doc.pdf"), "quote": "words"}, format="json"
    )
    assert ok.json()["result"]["match"] == "exact"


@pytest.mark.postgres
@pytest.mark.django_db
def test_a_match_queue_filled_while_pages_are_fetched_is_503_after_payment(
    api, pages, small_queues, settings
):
    """Redis holds the queue, so the page server's thread can fill it mid-request."""
    if not in_redis():
        pytest.skip("needs CACHE_URL=redis://...")
    settings.ATTEST_TRIAL_CALLS_PER_DAY = 0
    settings.X402_FACILITATOR_URL = ""
    held = []

    def fill_then_answer(h) -> None:
        held.append(queues.MATCH_QUEUE.join())
        send(h, 200, b"<p>a fine page</p>")

    pages.routes["/p"] = fill_then_answer
    body = {"citations": [{"url": pages.url("/p"), "quote": "fine"}]}
    offer = decode_offer(api.post("/v1/verify/citations", body, format="json"))
    payment = Payer().pay(offer)
    try:
        refused = api.post(
            "/v1/verify/citations", body, format="json", HTTP_PAYMENT_SIGNATURE=payment
        )
    finally:
        for place in held:
            place.leave()
    assert refused.status_code == 503
    assert refused.json()["error"]["details"]["reason"] == "match_queue_full"
    assert PaymentClaim.objects.get().state == "released"
    assert not LocalTransfer.objects.exists()


# --- the PDF pool ---------------------------------------------------------------------------


def _pdf(pages: int, seed: int) -> bytes:
    rng = random.Random(seed)
    words = ["alpha", "beta", "gamma", "delta", "harbour", "nitrate", "survey", "water"]
    lines = [[" ".join(rng.choice(words) for _ in range(12)) for _ in range(40)]]
    return text_pdf(lines * pages)


@pytest.mark.django_db
def test_only_reading_time_counts_against_the_pdf_limit(small_queues, monkeypatch):
    small_queues.ATTEST_PDF_QUEUE = 3
    one = _pdf(60, 1)
    assert isinstance(pdf_pool.read_pdf(one), PdfText)  # warm the workers up
    monkeypatch.setattr(pdf_pool, "PDF_SECONDS", 1.5)
    # Read one after another (one reader): together well over the limit, each well under.
    outcomes = pdf_pool.read_pdfs([one, _pdf(60, 2), _pdf(60, 3), _pdf(60, 4)])
    assert all(isinstance(outcome, PdfText) for outcome in outcomes)


@pytest.mark.django_db
def test_a_read_over_the_limit_is_killed_with_its_worker(small_queues, monkeypatch):
    assert isinstance(pdf_pool.read_pdf(_pdf(1, 5)), PdfText)
    before = {p.pid for p in multiprocessing.active_children()}
    # A 600-page read takes about 0.2 s of PDFium on an idle machine: forty times the
    # limit, so the kill does not hang on how busy or fast the machine is.
    monkeypatch.setattr(pdf_pool, "PDF_SECONDS", 0.005)
    with pytest.raises(pdf_pool.PdfTimeout):
        pdf_pool.read_pdf(_pdf(600, 6))
    after = {p.pid for p in multiprocessing.active_children()}
    assert before - after  # the worker that read it is gone
    monkeypatch.setattr(pdf_pool, "PDF_SECONDS", 60)
    assert isinstance(pdf_pool.read_pdf(_pdf(1, 7)), PdfText)


@pytest.mark.django_db
def test_more_pdfs_than_places_are_read_in_turn_through_the_places_there_are(small_queues):
    outcomes = pdf_pool.read_pdfs([_pdf(1, 8), _pdf(1, 9), _pdf(2, 10)])  # one place exists
    assert [o.page_count for o in outcomes] == [1, 1, 2]
    assert pdf_pool.PDF_QUEUE.has_room()  # every place was left


@pytest.mark.django_db
def test_a_full_pdf_queue_takes_no_place_and_says_when_to_retry(small_queues):
    with pdf_pool.PDF_QUEUE.join():
        with pytest.raises(OverCapacity) as refused:
            pdf_pool.read_pdfs([_pdf(1, 11), _pdf(1, 12)])
        assert refused.value.retry_after == 5
    assert pdf_pool.PDF_QUEUE.has_room()


def _pdf_batch(pages, count: int) -> list[dict]:
    citations = []
    for n in range(count):
        lines = [[f"Report {n} opens here."], [f"Report {n} ends on its second page."]]
        pages.routes[f"/r{n}.pdf"] = page(text_pdf(lines), content_type="application/pdf")
        citations.append({"url": pages.url(f"/r{n}.pdf"), "quote": f"Report {n} ends"})
    return citations


def _paid_citations(api, citations):
    """The batch, paying its offer (signed for real, settled by the local facilitator)."""
    response = _citations(api, citations)
    if response.status_code != 402:
        return response
    return _citations(api, citations, HTTP_PAYMENT_SIGNATURE=Payer().pay(decode_offer(response)))


@pytest.mark.django_db
def test_a_batch_of_ten_pdfs_is_served_by_an_idle_server_with_the_defaults(api, pages, trial):
    assert (trial.ATTEST_PDF_READERS, trial.ATTEST_PDF_QUEUE) == (2, 6)  # 8 places, 10 PDFs
    response = _paid_citations(api, _pdf_batch(pages, 10))
    assert response.status_code == 200, response.content
    results = response.json()["results"]
    assert [(r["match"], r["pdf_page"]) for r in results] == [("exact", 2)] * 10
    assert pdf_pool.PDF_QUEUE.has_room()
    assert LocalTransfer.objects.count() == 1


@pytest.mark.django_db
def test_a_batch_of_ten_pdfs_is_told_to_retry_only_while_others_hold_the_places(api, pages, trial):
    citations = _pdf_batch(pages, 10)
    held = pdf_pool.PDF_QUEUE.join(8)  # every place taken by other requests
    refused = _paid_citations(api, citations)
    assert refused.status_code == 503
    assert refused.json()["error"]["details"]["reason"] == "pdf_queue_full"
    assert refused["Retry-After"] == "5"
    assert not LocalTransfer.objects.exists()  # a refusal is not charged
    held.leave()  # the other requests are done: the same batch is served
    response = _paid_citations(api, citations)
    assert response.status_code == 200, response.content
    assert [r["match"] for r in response.json()["results"]] == ["exact"] * 10
