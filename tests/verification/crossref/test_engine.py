"""Reading Crossref's answers and pacing as plain values (no database, no network)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from email.utils import format_datetime

import httpx
import pytest

from tests.verification.crossref import works
from verification.engine.crossref import (
    MAX_AUTHORS,
    CrossrefWork,
    NotCrossrefAnswer,
    notices_updating,
    read_work,
    work_list_items,
    work_message,
)
from verification.engine.pace import (
    BUDGETS,
    DEFAULT_BACKOFF_SECONDS,
    PaceState,
    advertised_spacing,
    retry_after_seconds,
)


def _envelope(message_type: str, message) -> bytes:
    return json.dumps(
        {
            "status": "ok",
            "message-type": message_type,
            "message-version": "1.0.0",
            "message": message,
        }
    ).encode()


# --- the envelope ------------------------------------------------------------------------


def test_a_work_is_read_from_its_envelope():
    message = work_message(_envelope("work", works.clean_work()))
    assert message["DOI"] == works.CLEAN


@pytest.mark.parametrize(
    "body",
    [
        b"Resource not found.",
        b"<html><body><h1>429 Too Many Requests</h1></body></html>",
        b'{"status": "error", "message-type": "work", "message": {}}',
        b'{"status": "ok", "message-type": "work-list", "message": {"items": []}}',
        b'{"status": "ok", "message-type": "work", "message": ["not", "an", "object"]}',
        b"\xff\xfe not utf-8",
    ],
)
def test_anything_but_a_work_envelope_is_refused(body):
    with pytest.raises(NotCrossrefAnswer):
        work_message(body)


def test_a_work_list_without_items_is_refused():
    with pytest.raises(NotCrossrefAnswer):
        work_list_items(_envelope("work-list", {"total-results": 0}))


# --- the crossref block ------------------------------------------------------------------


def test_a_retracted_work_lists_every_notice_and_is_retracted():
    work = read_work(works.retracted_work())
    assert work.retracted is True
    assert work.title == "RETRACTED: Ileal-lymphoid-nodular hyperplasia in a test journal"
    assert work.year == 1998
    assert work.container_title == "The Journal of Tests"
    assert work.type == "journal-article"
    assert [n.as_json() for n in work.updates] == [
        {
            "type": "correction",
            "doi": works.RETRACTED_CORRECTION,
            "source": "retraction-watch",
            "date": "2004-03-06",
        },
        {
            "type": "retraction",
            "doi": works.RETRACTION_NOTICE,
            "source": "publisher",
            "date": "2010-02-06",
        },
        {
            "type": "retraction",
            "doi": works.RETRACTION_NOTICE,
            "source": "retraction-watch",
            "date": "2010-02-06",
        },
    ]
    assert work.update_to is None


def test_at_most_ten_authors_are_listed_with_the_total():
    work = read_work(works.retracted_work())
    assert len(work.authors) == MAX_AUTHORS == 10
    assert work.authors_total == 12
    assert work.authors[0] == "AJ Wakefield"


def test_an_organisation_as_author_is_named():
    assert read_work(works.concern_work()).authors == ("The Estuary Consortium",)


@pytest.mark.parametrize(
    ("kind", "retracted"),
    [
        ("retraction", True),
        ("withdrawal", True),
        ("removal", True),
        ("correction", False),
        ("expression_of_concern", False),
        ("Expression-of-Concern", False),
        ("partial_retraction", False),
        ("erratum", False),
    ],
)
def test_only_a_retraction_withdrawal_or_removal_retracts(kind, retracted):
    message = works.clean_work() | {
        "updated-by": [{"DOI": "10.5555/n", "type": kind, "source": "publisher"}]
    }
    work = read_work(message)
    assert work.retracted is retracted
    assert work.updates[0].type == kind.lower().replace("-", "_")


def test_a_notice_cited_directly_reports_what_it_updates():
    work = read_work(works.retraction_notice())
    assert work.retracted is False
    assert work.updates == ()
    assert [n.as_json() for n in work.update_to] == [
        {"type": "retraction", "doi": works.RETRACTED, "source": "publisher", "date": "2010-02-06"},
        {
            "type": "retraction",
            "doi": works.RETRACTED,
            "source": "retraction-watch",
            "date": "2010-02-06",
        },
    ]


def test_the_cross_checked_notices_are_merged_without_repeats():
    items = [works.retraction_notice(), works.retracted_correction(), works.clean_work()]
    cross_checked = notices_updating(works.RETRACTED, items)
    assert {(n.doi, n.type, n.source) for n in cross_checked} == {
        (works.RETRACTION_NOTICE, "retraction", "publisher"),
        (works.RETRACTION_NOTICE, "retraction", "retraction-watch"),
        (works.RETRACTED_CORRECTION, "correction", "retraction-watch"),
    }
    work = read_work(works.retracted_work(), also_updated_by=cross_checked)
    assert len(work.updates) == 3


def test_a_notice_only_the_cross_check_finds_retracts_the_work():
    cross_checked = notices_updating(works.QUIETLY_WITHDRAWN, [works.withdrawal_notice()])
    work = read_work(works.quietly_withdrawn_work(), also_updated_by=cross_checked)
    assert work.retracted is True
    assert work.updates[0].doi == works.WITHDRAWAL_NOTICE


def test_a_notice_for_another_doi_is_not_taken_from_the_cross_check():
    assert notices_updating(works.CLEAN, [works.retraction_notice()]) == []


def test_titles_are_collapsed_and_missing_fields_are_none():
    work = read_work(
        {"DOI": "10.5555/x", "title": ["  a \n  title "], "issued": {"date-parts": [[None]]}}
    )
    assert work.title == "a title"
    assert work.year is None
    assert work.container_title is None
    assert work.authors == ()
    assert work.authors_total == 0


def test_garbage_in_a_work_is_ignored_rather_than_raised():
    message = {
        "title": {"not": "a list"},
        "author": "nobody",
        "updated-by": ["nonsense", {"type": 3}, {"DOI": "10.5555/n", "type": "retraction"}],
        "update-to": {"DOI": "x"},
        "issued": {"date-parts": "1998"},
    }
    work = read_work(message)
    assert work.title is None
    assert work.authors == ()
    assert [n.doi for n in work.updates] == ["10.5555/n"]
    assert work.update_to is None
    assert work.year is None


def test_a_work_round_trips_through_its_cached_form():
    work = read_work(works.retraction_notice())
    assert CrossrefWork.from_json(json.loads(json.dumps(work.as_json()))) == work
    clean = read_work(works.clean_work())
    assert CrossrefWork.from_json(json.loads(json.dumps(clean.as_json()))) == clean


# --- Crossref's limit headers ------------------------------------------------------------


@pytest.mark.parametrize(
    ("limit", "interval", "spacing"),
    [
        ("50", "1s", 0.02),
        ("50, 50", "1s, 1s", 0.02),  # repeated values, as Crossref has sent them
        ("5", "1s", 0.2),
        ("10, 5", "1s, 2s", 0.4),  # the strictest reading
        ("100", "60s", 0.6),
        ("100", "1m", 0.6),
        (None, "1s", None),
        ("50", None, None),
        ("0", "1s", None),
        ("lots", "soon", None),
    ],
)
def test_the_advertised_limit_becomes_a_spacing_between_requests(limit, interval, spacing):
    assert advertised_spacing(limit, interval) == (
        pytest.approx(spacing) if spacing is not None else None
    )


def test_retry_after_is_read_as_seconds_or_as_a_date():
    now = datetime(2026, 10, 10, 12, 0, 0, tzinfo=UTC).timestamp()
    assert retry_after_seconds("7", now=now) == 7
    later = format_datetime(datetime(2026, 10, 10, 12, 0, 30, tzinfo=UTC), usegmt=True)
    assert retry_after_seconds(later, now=now) == pytest.approx(30)
    assert retry_after_seconds("whenever", now=now) is None
    assert retry_after_seconds(None, now=now) is None


# --- the pace ------------------------------------------------------------------------------


def test_each_tier_has_its_own_minute_budget():
    assert BUDGETS == {"paid": 120, "trial": 6}
    state = PaceState()
    now = 1_000_000.0
    assert all(state.take("trial", now + i) for i in range(6))
    assert not state.take("trial", now + 6)
    assert state.take("paid", now + 6)  # the paid budget is untouched
    assert all(state.take("paid", now + 6) for _ in range(119))
    assert not state.take("paid", now + 7)


def test_a_budget_frees_a_lookup_a_minute_after_it_was_spent():
    state = PaceState()
    now = 1_000_000.0
    for i in range(6):
        assert state.take("trial", now + i)
    assert not state.take("trial", now + 59.9)
    assert state.take("trial", now + 60.0)  # the first one is now a minute old
    assert not state.take("trial", now + 60.5)


def test_a_429_backs_off_for_retry_after_or_a_minute():
    state = PaceState()
    state.answered(
        sent_at=100.0, status=429, headers=httpx.Headers({"retry-after": "7"}), now=101.0
    )
    assert state.backing_off(107.9)
    assert not state.backing_off(108.1)
    silent = PaceState()
    silent.answered(sent_at=100.0, status=429, headers=httpx.Headers(), now=100.0)
    assert silent.not_before == 100.0 + DEFAULT_BACKOFF_SECONDS


def test_requests_are_spaced_as_crossref_advertises():
    state = PaceState()
    headers = httpx.Headers({"x-rate-limit-limit": "5", "x-rate-limit-interval": "1s"})
    state.answered(sent_at=100.0, status=200, headers=headers, now=100.3)
    # 5 a second is one every 0.2 s, with a tenth to spare.
    assert state.wait_before_request(100.0) == pytest.approx(0.22)
    assert state.wait_before_request(100.3) == 0.0
    # An answer without the headers keeps the spacing last advertised.
    state.answered(sent_at=101.0, status=200, headers=httpx.Headers(), now=101.1)
    assert state.next_request_at == pytest.approx(101.22)


def test_the_pace_state_survives_its_stored_form():
    state = PaceState()
    state.take("paid", 5.0)
    state.answered(
        sent_at=5.0,
        status=429,
        headers=httpx.Headers(
            {"retry-after": "3", "x-rate-limit-limit": "2", "x-rate-limit-interval": "1s"}
        ),
        now=5.0,
    )
    assert PaceState.from_json(json.loads(json.dumps(state.to_json()))) == state
    assert PaceState.from_json(None) == PaceState()


def test_fields_of_the_wrong_kind_in_a_notice_list_are_skipped():
    item = {"DOI": "10.5555/notice", "update-to": 5}
    assert notices_updating(works.CLEAN, [item, {"update-to": [{"DOI": works.CLEAN}]}]) == []
    assert read_work({"updated-by": 7, "author": 3, "update-to": "x"}).updates == ()
