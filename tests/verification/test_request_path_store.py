"""What a trial verify/quote call asks of the shared store kept in the database (make run's)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.verification.conftest import page

pytestmark = pytest.mark.django_db

ARTICLE = "<html><body><p>The committee said the review is overdue.</p></body></html>"


@pytest.fixture(autouse=True)
def database_store(settings):
    # Without Redis the capacity limits and robots.txt rules live in verification_sharedstate.
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    settings.ATTEST_TRIAL_CALLS_PER_DAY = 5


def _trial_call(api, url: str) -> list[str]:
    with CaptureQueriesContext(connection) as queries:
        response = api.post(
            "/v1/verify/quote", {"url": url, "quote": "the review is overdue"}, format="json"
        )
    assert response.status_code == 200, response.content
    assert response.json()["tier"] == "trial"
    return [query["sql"] for query in queries.captured_queries]


def _on_store(statements: list[str], verb: str, key: str = "") -> list[str]:
    return [
        sql
        for sql in statements
        if sql.lstrip().upper().startswith(verb)
        and "verification_sharedstate" in sql
        and key in sql
    ]


def test_the_robots_rules_admission_read_are_not_read_again_for_the_fetch(api, pages):
    pages.routes["/article"] = page(ARTICLE)
    url = pages.url("/article")
    _trial_call(api, url)  # robots.txt fetched and kept
    statements = _trial_call(api, url)
    assert len(_on_store(statements, "SELECT", "robots:")) == 1, statements


def test_an_unpaid_callers_place_is_given_back_without_deleting_its_row(api, pages):
    pages.routes["/article"] = page(ARTICLE)
    url = pages.url("/article")
    _trial_call(api, url)
    statements = _trial_call(api, url)
    assert _on_store(statements, "DELETE") == [], statements
    assert _on_store(statements, "INSERT") == [], statements
    assert len(_on_store(statements, "UPDATE", "unpaid-checks:")) == 2, statements
