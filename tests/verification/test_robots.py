"""robots.txt per RFC 9309, served by a real loopback server."""

from __future__ import annotations

import socket

import pytest
from django.core.cache import cache

from tests.verification.conftest import page, redirect
from verification.network.fetch import ROBOTS_TOKEN, check_url
from verification.network.robots import RobotsDisallowed, ensure_robots_allow, robots_allows

# The rules are kept in the store every process shares: Redis, or else the database.
pytestmark = pytest.mark.django_db

RULES = f"""
User-agent: *
Disallow: /everyone-keep-out

User-agent: {ROBOTS_TOKEN}
Disallow: /private
Allow: /private/open
"""


def test_rules_for_our_agent_are_obeyed(pages):
    pages.routes["/robots.txt"] = page(RULES, content_type="text/plain")
    assert not robots_allows(check_url(pages.url("/private/page")))
    assert robots_allows(check_url(pages.url("/private/open/page")))
    assert robots_allows(check_url(pages.url("/public")))


def test_disallowed_url_raises_robots_disallowed(pages):
    pages.routes["/robots.txt"] = page(RULES, content_type="text/plain")
    with pytest.raises(RobotsDisallowed) as refused:
        ensure_robots_allow(check_url(pages.url("/private/x")))
    assert refused.value.status_code == 403
    assert refused.value.code == "robots_disallowed"


@pytest.mark.parametrize("status", [401, 403, 404, 410])
def test_a_4xx_robots_file_allows_everything(pages, status):
    pages.routes["/robots.txt"] = page("Disallow: /", status=status, content_type="text/plain")
    assert robots_allows(check_url(pages.url("/anything")))


@pytest.mark.parametrize("status", [500, 502, 503])
def test_a_5xx_robots_file_disallows_everything(pages, status):
    pages.routes["/robots.txt"] = page("", status=status)
    assert not robots_allows(check_url(pages.url("/anything")))


def test_an_unreachable_robots_file_disallows_everything(settings):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    settings.ATTEST_FETCH_ALLOW = frozenset({("127.0.0.1", port)})
    cache.clear()
    assert not robots_allows(check_url(f"http://127.0.0.1:{port}/page"))


def test_robots_redirects_are_followed(pages):
    pages.routes["/robots.txt"] = redirect("/real-robots.txt", 301)
    pages.routes["/real-robots.txt"] = page("User-agent: *\nDisallow: /", content_type="text/plain")
    assert not robots_allows(check_url(pages.url("/page")))


def test_a_robots_redirect_to_a_blocked_address_disallows(pages, canary):
    pages.routes["/robots.txt"] = redirect(canary.url("/robots.txt"))
    assert not robots_allows(check_url(pages.url("/page")))
    assert canary.seen == []


def test_robots_is_fetched_once_and_then_served_from_the_cache(pages):
    pages.routes["/robots.txt"] = page(RULES, content_type="text/plain")
    for path in ("/a", "/b", "/private/c"):
        robots_allows(check_url(pages.url(path)))
    assert pages.paths().count("/robots.txt") == 1
