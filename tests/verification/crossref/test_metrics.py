"""Crossref lookups are counted by status (against the local Crossref server)."""

from __future__ import annotations

import pytest
from prometheus_client import REGISTRY

from tests.verification.crossref import works
from verification.crossref.lookups import crossref_for_pages

pytestmark = pytest.mark.django_db


def _count(status: str) -> float:
    return (
        REGISTRY.get_sample_value("attest_crossref_lookups_total", {"status": status, "reason": ""})
        or 0.0
    )


def test_a_lookup_asked_of_crossref_is_counted_once_and_a_cached_one_not_again(crossref):
    found, missing = _count("found"), _count("not_found")
    assert crossref_for_pages([works.RETRACTED], tier="paid")[works.RETRACTED].status == "found"
    assert _count("found") == found + 1
    crossref_for_pages([works.RETRACTED], tier="paid")  # answered from the cache
    assert _count("found") == found + 1
    absent = "10.5555/no-such-work.2020"
    assert crossref_for_pages([absent], tier="paid")[absent].status == "not_found"
    assert _count("not_found") == missing + 1
