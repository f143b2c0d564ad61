"""The docs pages say how Crossref lookups run on this server, from the running code."""

from __future__ import annotations

import pytest

from tests.attest.test_docs import _html, _rows

pytestmark = pytest.mark.django_db


def test_the_limits_page_shows_the_two_budgets_and_whether_lookups_are_on(client, settings):
    settings.ATTEST_CROSSREF_URL = "http://127.0.0.1:8555"
    settings.ATTEST_CROSSREF_TIMEOUT = 2.5
    rows = {row[0]: row for row in _rows(_html(client, "/docs/limits"), "limit")}
    assert rows["Lookups for paid calls, across all callers"][1] == "120 a minute"
    assert rows["Lookups for free trial calls, a budget of their own"][1] == "6 a minute"
    assert rows["One Crossref request"][1:] == [
        "2.5 s",
        "crossref.status skipped (reason timeout)",
        "ATTEST_CROSSREF_TIMEOUT",
    ]
    assert rows["DOI lookups"][1] == "on"
    settings.ATTEST_CROSSREF_URL = ""
    rows = {row[0]: row for row in _rows(_html(client, "/docs/limits"), "limit")}
    assert rows["DOI lookups"][1] == "off"


def _text(client, path: str) -> str:
    return " ".join(_html(client, path).text_content().split())


def test_the_verify_quote_page_describes_the_block_and_says_when_lookups_are_off(client, settings):
    settings.ATTEST_CROSSREF_URL = "http://127.0.0.1:8555"
    on = _text(client, "/docs/verify-quote")
    for words in ("doi_unchecked", "update_to", "doi_status", "at most 120 a minute"):
        assert words in on
    assert "DOI lookups are off" not in on
    settings.ATTEST_CROSSREF_URL = ""
    assert "On this server DOI lookups are off" in _text(client, "/docs/verify-quote")
