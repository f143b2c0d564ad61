"""With Redis down, paid verification goes on and obeys robots.txt; free work waits.

Limits that cannot count refuse (503 unavailable), so unpaid work stops for the outage,
but a request carrying a payment is never turned away by it and the trial budget, which
lives in the database, is not spent by the refusals.
"""

from __future__ import annotations

import pytest

from billing.models import TrialUse
from tests.billing.conftest import Payer, decode_offer
from tests.redis_outage import redis_down
from tests.verification.conftest import page

pytestmark = pytest.mark.django_db


@pytest.fixture
def cache_down(pages):
    # After `pages`, so its cache.clear() runs on the working cache at both ends.
    with redis_down():
        yield


@pytest.fixture
def paid_only(settings):
    settings.ATTEST_TRIAL_CALLS_PER_DAY = 0
    settings.X402_FACILITATOR_URL = ""


def _post(api, url: str, quote: str, payment: str | None = None):
    headers = {"HTTP_PAYMENT_SIGNATURE": payment} if payment else {}
    return api.post("/v1/verify/quote", {"url": url, "quote": quote}, format="json", **headers)


def test_robots_txt_is_read_live_and_still_obeyed_when_the_cache_is_down(api, pages, paid_only):
    pages.routes["/robots.txt"] = page(
        "User-agent: *\nDisallow: /secret", content_type="text/plain"
    )
    pages.routes["/secret"] = page("<p>secret words</p>")
    pages.routes["/open"] = page("<p>open words here</p>")
    payment = Payer().pay(decode_offer(_post(api, pages.url("/open"), "open words here")))
    pages.seen.clear()
    with redis_down():
        refused = _post(api, pages.url("/secret"), "secret words", payment)
        assert refused.status_code == 403, refused.content
        assert refused.json()["error"]["code"] == "robots_disallowed"
        served = _post(api, pages.url("/open"), "open words here", payment)
    assert served.status_code == 200, served.content
    assert (served.json()["result"]["match"], served.json()["tier"]) == ("exact", "paid")
    assert "/secret" not in pages.paths()
    # Nothing could be cached, so each check read robots.txt again.
    assert pages.paths().count("/robots.txt") == 2


def test_unpaid_work_waits_out_a_cache_outage_without_spending_the_trial(
    api, pages, cache_down, settings
):
    settings.ATTEST_TRIAL_CALLS_PER_DAY = 1
    pages.routes["/a"] = page("<p>trial words</p>")
    refused = _post(api, pages.url("/a"), "trial words")
    assert refused.status_code == 503, refused.content
    assert refused.json()["error"]["code"] == "unavailable"
    assert int(refused["Retry-After"]) > 0
    assert "/a" not in pages.paths()
    assert not TrialUse.objects.exists()
