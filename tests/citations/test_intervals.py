"""Property tests for the interval rules that statuses and as-of queries rest on."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from citations.extract.intervals import Interval, derive_status, status_as_of

BASE = datetime(2026, 1, 1, tzinfo=UTC)
moments = st.integers(min_value=0, max_value=1000).map(lambda n: BASE + timedelta(seconds=n))


@st.composite
def intervals(draw):
    start = draw(moments)
    end = draw(st.one_of(st.none(), moments.filter(lambda m: m >= start)))
    return Interval(start, end, draw(st.booleans()), draw(st.booleans()))


@given(intervals(), intervals())
def test_overlap_is_symmetric(a, b):
    assert a.overlaps(b) == b.overlaps(a)


@given(intervals(), intervals(), moments)
def test_a_shared_instant_means_overlap(a, b, moment):
    if a.contains(moment) and b.contains(moment):
        assert a.overlaps(b)


@given(intervals())
def test_a_nonempty_interval_overlaps_itself(a):
    assert a.overlaps(a) == (not a.is_empty)


@given(intervals(), moments)
def test_closing_at_a_moment_excludes_it_and_everything_after(a, moment):
    if moment < a.start or (a.end is not None and moment > a.end):
        return
    closed = a.closed_at(moment)
    assert not closed.contains(moment)
    assert not closed.contains(moment + timedelta(seconds=1))
    # Nothing before the cut changes.
    before = moment - timedelta(seconds=1)
    assert closed.contains(before) == a.contains(before)


@given(intervals(), moments)
def test_successor_starting_at_the_cut_never_overlaps_the_closed_one(a, moment):
    if moment < a.start or (a.end is not None and moment > a.end):
        return
    assert not a.closed_at(moment).overlaps(Interval(moment))


@given(intervals(), moments)
def test_as_seen_at_hides_only_ends_recorded_later(known, moment):
    seen = known.as_seen_at(moment)
    assert seen.start == known.start
    if known.end is not None and moment >= known.end:
        assert seen == known
    else:
        assert seen.end is None


@given(intervals(), intervals(), st.booleans(), st.booleans())
def test_status_follows_the_seed_table(valid, known, retracted, reinterpreted):
    if known.end is None and (retracted or reinterpreted):
        with pytest.raises(ValueError):
            derive_status(
                valid=valid, known=known, retracted=retracted, reinterpreted=reinterpreted
            )
        return
    status = derive_status(
        valid=valid, known=known, retracted=retracted, reinterpreted=reinterpreted
    )
    if known.end is None:
        assert status == ("current" if valid.end is None else "validity_closed")
    elif retracted:
        assert status == "retracted"
    elif reinterpreted:
        assert status == "reinterpreted"
    else:
        assert status == "knowledge_closed"


@given(intervals(), intervals(), moments)
def test_status_as_of_a_time_before_the_close_is_still_believed(valid, known, moment):
    if not known.contains(moment):
        return
    status = status_as_of(
        valid=valid,
        known=known,
        retracted=known.end is not None,
        reinterpreted=False,
        known_at=moment,
    )
    if known.end is not None and moment < known.end:
        assert status in {"current", "validity_closed"}


def test_an_interval_cannot_end_before_it_starts():
    with pytest.raises(ValueError):
        Interval(BASE, BASE - timedelta(seconds=1))
