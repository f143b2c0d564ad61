"""The Crossref settings are read strictly: a bad value stops start-up by name."""

from __future__ import annotations

import environ
import pytest
from django.core.exceptions import ImproperlyConfigured

from attest.config import optional_base_url, optional_email


@pytest.mark.parametrize(
    ("value", "read"),
    [
        ("https://api.crossref.org", "https://api.crossref.org"),
        ("https://api.crossref.org/", "https://api.crossref.org"),
        ("http://127.0.0.1:8555/v1", "http://127.0.0.1:8555/v1"),
        ("", ""),  # DOI lookups off
    ],
)
def test_the_crossref_url_is_a_base_url_or_empty(monkeypatch, value, read):
    monkeypatch.setenv("ATTEST_CROSSREF_URL", value)
    assert optional_base_url(environ.Env(), "ATTEST_CROSSREF_URL", default="x") == read


@pytest.mark.parametrize(
    "value",
    [
        "api.crossref.org",
        "ftp://api.crossref.org",
        "https://api.crossref.org/?mailto=x@y.org",
        "https://user:pw@api.crossref.org",
        "https://api.crossref.org:99999",
    ],
)
def test_a_malformed_crossref_url_is_refused(monkeypatch, value):
    monkeypatch.setenv("ATTEST_CROSSREF_URL", value)
    with pytest.raises(ImproperlyConfigured, match="ATTEST_CROSSREF_URL"):
        optional_base_url(environ.Env(), "ATTEST_CROSSREF_URL", default="")


def test_the_mailto_is_an_address_safe_in_a_user_agent(monkeypatch):
    monkeypatch.setenv("ATTEST_CROSSREF_MAILTO", "ops+crossref@attest.example")
    assert optional_email(environ.Env(), "ATTEST_CROSSREF_MAILTO") == "ops+crossref@attest.example"
    monkeypatch.setenv("ATTEST_CROSSREF_MAILTO", "")
    assert optional_email(environ.Env(), "ATTEST_CROSSREF_MAILTO") == ""
    for bad in ("not an address", "ops@attest.example) evil (", "ops@localhost", "@x.org"):
        monkeypatch.setenv("ATTEST_CROSSREF_MAILTO", bad)
        with pytest.raises(ImproperlyConfigured, match="ATTEST_CROSSREF_MAILTO"):
            optional_email(environ.Env(), "ATTEST_CROSSREF_MAILTO")
