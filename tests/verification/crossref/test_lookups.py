"""Crossref lookups against a local server speaking Crossref's envelope: statuses, cache, pace."""

from __future__ import annotations

import itertools
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from tests.verification.crossref import works
from verification.crossref import lookups
from verification.crossref.lookups import CrossrefOutcome, crossref_for_pages, crossref_summary
from verification.crossref.pace import crossref_turn
from verification.models import CrossrefAnswer, CrossrefLookup

pytestmark = pytest.mark.django_db


def _one(doi: str, tier: str = "paid", **kwargs) -> CrossrefOutcome:
    return crossref_for_pages([doi], tier=tier, **kwargs)[doi]


# --- what Crossref says about a work ------------------------------------------------------


def test_a_retracted_work_is_found_retracted_with_its_notices(crossref):
    outcome = _one(works.RETRACTED)
    assert outcome.status == "found"
    assert outcome.retracted is True
    block = outcome.as_json(doi_source="url")
    assert block["doi"] == works.RETRACTED
    assert block["doi_source"] == "url"
    assert block["status"] == "found"
    assert block["reason"] is None
    assert block["retracted"] is True
    assert block["title"].startswith("RETRACTED:")
    assert (block["year"], block["container_title"], block["type"]) == (
        1998,
        "The Journal of Tests",
        "journal-article",
    )
    assert len(block["authors"]) == 10 and block["authors_total"] == 12
    assert [(u["type"], u["doi"], u["source"]) for u in block["updates"]] == [
        ("correction", works.RETRACTED_CORRECTION, "retraction-watch"),
        ("retraction", works.RETRACTION_NOTICE, "publisher"),
        ("retraction", works.RETRACTION_NOTICE, "retraction-watch"),
    ]
    assert block["update_to"] is None


def test_the_lookup_asks_for_the_work_and_for_the_notices_naming_it(crossref):
    _one(works.RETRACTED)
    assert [s.path for s in crossref.seen] == [f"/works/{works.RETRACTED}", "/works"]
    listing = crossref.seen[1].query
    assert listing["filter"] == [f"updates:{works.RETRACTED}"]
    assert listing["select"] == ["DOI,update-to"]


def test_a_notice_the_work_record_misses_is_found_by_the_cross_check(crossref):
    outcome = _one(works.QUIETLY_WITHDRAWN)
    assert outcome.retracted is True
    assert [(u.type, u.doi) for u in outcome.work.updates] == [
        ("withdrawal", works.WITHDRAWAL_NOTICE)
    ]


def test_a_corrected_work_is_not_retracted(crossref):
    outcome = _one(works.CORRECTED)
    assert outcome.status == "found" and outcome.retracted is False
    assert [(u.type, u.doi, u.source, u.date) for u in outcome.work.updates] == [
        ("correction", works.CORRECTION_NOTICE, "publisher", "2020-01-15")
    ]


def test_an_expression_of_concern_is_listed_but_does_not_retract(crossref):
    outcome = _one(works.CONCERN)
    assert outcome.retracted is False
    assert [u.type for u in outcome.work.updates] == ["expression_of_concern"]
    assert outcome.work.authors == ("The Estuary Consortium",)
    assert outcome.work.year == 2021


def test_a_notice_cited_directly_says_what_it_updates(crossref):
    block = _one(works.RETRACTION_NOTICE).as_json()
    assert block["status"] == "found"
    assert block["retracted"] is False
    assert block["updates"] == []
    assert {(u["type"], u["doi"], u["source"]) for u in block["update_to"]} == {
        ("retraction", works.RETRACTED, "publisher"),
        ("retraction", works.RETRACTED, "retraction-watch"),
    }


def test_a_clean_work_is_found_with_no_notices(crossref):
    block = _one(works.CLEAN).as_json()
    assert block["status"] == "found"
    assert block["retracted"] is False
    assert block["updates"] == [] and block["update_to"] is None
    assert block["title"] == "Regional climate report 2025"
    assert block["authors"] == ["Rachel Carson"] and block["authors_total"] == 1


def test_an_unknown_doi_is_not_found(crossref):
    outcome = _one(works.UNKNOWN)
    assert outcome.status == "not_found"
    assert outcome.retracted is None
    assert outcome.as_json() == {
        "doi": works.UNKNOWN,
        "status": "not_found",
        "reason": None,
        "retracted": None,
    }
    # Crossref's 404 is an answer: no second request for the notices.
    assert crossref.work_paths() == [f"/works/{works.UNKNOWN}"] and len(crossref.seen) == 1


def test_the_user_agent_names_our_contact_for_the_polite_pool(crossref):
    _one(works.CLEAN)
    assert "mailto:ops@attest.example" in crossref.seen[0].user_agent
    assert crossref.seen[0].user_agent.startswith("AttestBot/1.0")


def test_a_doi_is_sent_percent_encoded_in_the_path(crossref):
    doi = "10.5555/s0140-6736(97)11096-0<x>"
    crossref.generated_prefix = "10.5555/s0140"
    assert _one(doi).status == "found"
    assert crossref.seen[0].path == "/works/10.5555/s0140-6736%2897%2911096-0%3Cx%3E"


# --- skipped lookups -----------------------------------------------------------------------


def test_a_slow_answer_is_skipped_as_a_timeout_and_asked_again_later(crossref, settings):
    settings.ATTEST_CROSSREF_TIMEOUT = 0.3
    crossref.delay = 1.0
    outcome = _one(works.CLEAN)
    assert (outcome.status, outcome.reason) == ("skipped", "timeout")
    assert outcome.as_json()["retracted"] is None
    assert not CrossrefAnswer.objects.exists()
    crossref.delay = 0.0
    assert _one(works.CLEAN).status == "found"


def test_crossrefs_429_skips_the_lookup_and_holds_back_the_next(crossref, monkeypatch):
    later = 0.0  # seconds the test has moved the pacing clock on
    monkeypatch.setattr(lookups, "pace_clock", lambda: time.time() + later)
    crossref.refuse_with_429({"Retry-After": "1"})
    first = _one(works.CLEAN)
    assert (first.status, first.reason) == ("skipped", "rate_limited")
    crossref.refusal = None
    # Within Crossref's Retry-After nothing is sent: the next DOI is skipped unasked.
    second = _one(works.CORRECTED)
    assert (second.status, second.reason) == ("skipped", "rate_limited")
    assert len(crossref.seen) == 1
    later = 1.1  # past the Retry-After, without waiting for it
    assert _one(works.CORRECTED).status == "found"


def test_a_server_error_is_skipped_as_unavailable_and_not_cached(crossref):
    crossref.refuse_with_500()
    outcome = _one(works.CLEAN)
    assert (outcome.status, outcome.reason) == ("skipped", "unavailable")
    assert not CrossrefAnswer.objects.exists()


def test_an_answer_that_is_not_crossrefs_envelope_is_unavailable(crossref):
    crossref.works[works.CLEAN] = {"DOI": works.CLEAN}
    crossref.answer = lambda path, query: (200, b"<html>a proxy's error page</html>", "text/html")
    try:
        outcome = _one(works.CLEAN)
    finally:
        del crossref.answer
    assert (outcome.status, outcome.reason) == ("skipped", "unavailable")


def test_a_refused_connection_is_unavailable(crossref, settings):
    settings.ATTEST_CROSSREF_URL = "http://127.0.0.1:9"  # nothing listens on discard
    outcome = _one(works.CLEAN)
    assert (outcome.status, outcome.reason) == ("skipped", "unavailable")


def test_a_lookup_that_cannot_get_its_turn_is_busy(crossref):
    # Another lookup (here, this test) holds the one turn past the batch's deadline.
    with crossref_turn(lease=10, wait_until=time.monotonic()) as held:
        assert held is not None
        outcome = _one(works.CLEAN, deadline_seconds=0.2)
    assert (outcome.status, outcome.reason) == ("skipped", "busy")
    assert crossref.seen == []
    assert _one(works.CLEAN).status == "found"  # the turn was given back


def test_requests_are_spaced_as_crossrefs_headers_ask(crossref):
    crossref.limit, crossref.interval = "4", "1s"  # one every 0.25 s
    crossref_for_pages([works.CLEAN, works.CORRECTED], tier="paid")
    assert len(crossref.seen) == 4
    starts = [s.started for s in crossref.seen]
    gaps = [later - earlier for earlier, later in itertools.pairwise(starts)]
    assert min(gaps) >= 0.25


# --- budgets -------------------------------------------------------------------------------


def test_trial_calls_have_six_lookups_a_minute_and_never_touch_the_paid_budget(crossref):
    crossref.generated_prefix = "10.5555/bulk."
    dois = [f"10.5555/bulk.{i}" for i in range(7)]
    outcomes = crossref_for_pages(dois, tier="trial")
    assert [o.status for o in outcomes.values()] == ["found"] * 6 + ["skipped"]
    assert outcomes[dois[6]].reason == "rate_limited"
    assert len(crossref.work_paths()) == 6
    assert _one("10.5555/bulk.paid", tier="paid").status == "found"


def test_paid_calls_have_120_lookups_a_minute_and_leave_the_trial_budget_alone(crossref):
    crossref.generated_prefix = "10.5555/bulk."
    crossref.limit, crossref.interval = "10000", "1s"
    statuses = []
    for batch in range(13):  # batches of ten, as verify/citations sends them
        dois = [f"10.5555/bulk.{batch}.{i}" for i in range(10)]
        statuses += [o.status for o in crossref_for_pages(dois, tier="paid").values()]
    assert statuses.count("found") == 120
    assert statuses[120:] == ["skipped"] * 10
    assert CrossrefLookup.objects.filter(reason="rate_limited", tier="paid").count() == 10
    assert _one("10.5555/bulk.trial", tier="trial").status == "found"


def test_answers_from_the_cache_spend_no_budget(crossref):
    crossref_for_pages([works.CLEAN], tier="trial")
    for _ in range(10):
        assert _one(works.CLEAN, tier="trial").status == "found"
    assert len(crossref.work_paths()) == 1


# --- the cache and the log -----------------------------------------------------------------


def test_answers_are_cached_a_day_not_found_included(crossref):
    crossref_for_pages([works.RETRACTED, works.UNKNOWN], tier="paid")
    requests = len(crossref.seen)
    again = crossref_for_pages([works.RETRACTED, works.UNKNOWN], tier="paid")
    assert len(crossref.seen) == requests
    assert again[works.RETRACTED].retracted is True
    assert again[works.UNKNOWN].status == "not_found"
    row = CrossrefAnswer.objects.get(doi=works.RETRACTED)
    assert row.expires_at - row.fetched_at == timedelta(days=1)
    assert row.retracted is True


def test_an_expired_answer_is_asked_again(crossref):
    _one(works.CLEAN)
    CrossrefAnswer.objects.update(
        fetched_at=timezone.now() - timedelta(days=2), expires_at=timezone.now() - timedelta(days=1)
    )
    _one(works.CLEAN)
    assert crossref.work_paths() == [f"/works/{works.CLEAN}"] * 2


def test_each_distinct_doi_is_looked_up_once_per_batch(crossref):
    outcomes = crossref_for_pages(
        [works.CLEAN, None, works.CLEAN.upper(), works.CORRECTED], tier="paid"
    )
    assert list(outcomes) == [works.CLEAN, works.CORRECTED]
    assert len(crossref.work_paths()) == 2


def test_every_lookup_is_logged_with_status_reason_and_latency(crossref, settings):
    crossref_for_pages([works.CLEAN, works.UNKNOWN], tier="paid", request_id="req-1")
    settings.ATTEST_CROSSREF_TIMEOUT = 0.2
    crossref.delay = 0.6
    crossref_for_pages([works.CORRECTED], tier="trial", request_id="req-2")
    rows = {r.doi: r for r in CrossrefLookup.objects.all()}
    assert (rows[works.CLEAN].status, rows[works.CLEAN].requests) == ("found", 2)
    assert (rows[works.UNKNOWN].status, rows[works.UNKNOWN].http_status) == ("not_found", 404)
    slow = rows[works.CORRECTED]
    assert (slow.status, slow.reason, slow.tier, slow.request_id) == (
        "skipped",
        "timeout",
        "trial",
        "req-2",
    )
    assert slow.latency_ms >= 200
    # A cached answer is no lookup.
    crossref_for_pages([works.CLEAN], tier="paid")
    assert CrossrefLookup.objects.filter(doi=works.CLEAN).count() == 1


def test_lookups_are_off_when_no_crossref_url_is_set(crossref, settings):
    settings.ATTEST_CROSSREF_URL = ""
    assert crossref_for_pages([works.CLEAN], tier="paid") == {}
    assert crossref.seen == []


def test_an_unknown_tier_is_a_programming_error(crossref):
    with pytest.raises(ValueError, match="tier"):
        crossref_for_pages([works.CLEAN], tier="sample")


def test_the_summary_counts_retracted_and_unchecked_citations(crossref, settings):
    outcomes = crossref_for_pages([works.RETRACTED, works.CLEAN], tier="paid")
    crossref.refuse_with_500()
    outcomes |= crossref_for_pages([works.CONCERN], tier="paid")
    per_citation = [
        outcomes[works.RETRACTED],
        outcomes[works.RETRACTED],  # two citations on one retracted paper
        outcomes[works.CLEAN],
        outcomes[works.CONCERN],  # skipped: unknown
        None,  # a page without a DOI
    ]
    assert crossref_summary(per_citation) == {"retracted": 2, "doi_unchecked": 1}
