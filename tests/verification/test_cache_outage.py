"""With Redis down, verification still obeys robots.txt and the trial still counts."""

from __future__ import annotations

import pytest

from tests.redis_outage import redis_down
from tests.verification.conftest import page

pytestmark = pytest.mark.django_db


@pytest.fixture
def cache_down(pages):
    # After `pages`, so its cache.clear() runs on the working cache at both ends.
    with redis_down():
        yield


def _post(api, url: str, quote: str):
    return api.post("/v1/verify/quote", {"url": url, "quote": quote}, format="json")


def test_robots_txt_is_read_live_and_still_obeyed_when_the_cache_is_down(api, pages, cache_down):
    pages.routes["/robots.txt"] = page(
        "User-agent: *\nDisallow: /secret", content_type="text/plain"
    )
    pages.routes["/secret"] = page("<p>secret words</p>")
    pages.routes["/open"] = page("<p>open words here</p>")
    refused = _post(api, pages.url("/secret"), "secret words")
    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "robots_disallowed"
    served = _post(api, pages.url("/open"), "open words here")
    assert served.status_code == 200, served.content
    assert served.json()["result"]["match"] == "exact"
    assert "/secret" not in pages.paths()
    # Nothing could be cached, so each check read robots.txt again.
    assert pages.paths().count("/robots.txt") == 2


def test_the_trial_budget_lives_in_the_database_and_counts_through_a_cache_outage(
    api, pages, cache_down, settings
):
    settings.ATTEST_TRIAL_CALLS_PER_DAY = 1
    pages.routes["/a"] = page("<p>trial words</p>")
    first = _post(api, pages.url("/a"), "trial words")
    assert (first.status_code, first.json()["tier"]) == (200, "trial")
    second = _post(api, pages.url("/a"), "trial words")
    assert second.status_code == 402  # the budget was spent, outage or not
