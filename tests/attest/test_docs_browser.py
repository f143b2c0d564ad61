"""The docs in a real browser: at a narrow window every long command and answer wraps,
so no line of an example hides behind a horizontal scrollbar.

Debian's Chromium through Playwright against the service on a live server (a free port).
"""

from __future__ import annotations

import pytest

from tests.browser import chromium, needs_chromium
from wiring.docs import PAGES

pytestmark = [pytest.mark.django_db(transaction=True), needs_chromium]

# Narrower than the page's text column: a phone held upright.
WIDTH = 420

# Each <pre> that is wider inside than its box (what a horizontal scrollbar would hide).
OVERFLOWING = """() => [...document.querySelectorAll('article pre')]
    .filter(pre => pre.scrollWidth > pre.clientWidth + 1)
    .map(pre => pre.textContent.split('\\n')[0].slice(0, 80))"""


def test_no_docs_example_needs_a_horizontal_scrollbar(live_server, tmp_path):
    paths = ["/docs", *[f"/docs/{doc.slug}" for doc in PAGES]]
    measured = 0
    with chromium(tmp_path / "profile", viewport={"width": WIDTH, "height": 900}) as browser:
        tab = browser.new_page()
        for path in paths:
            assert tab.goto(f"{live_server.url}{path}").status == 200, path
            measured += tab.evaluate("() => document.querySelectorAll('article pre').length")
            assert tab.evaluate(OVERFLOWING) == [], path
    assert measured > 40


def test_the_landing_pages_commands_show_whole_at_a_narrow_window(live_server, tmp_path):
    with chromium(tmp_path / "profile", viewport={"width": WIDTH, "height": 900}) as browser:
        tab = browser.new_page()
        assert tab.goto(f"{live_server.url}/").status == 200
        assert tab.evaluate("() => document.querySelectorAll('pre.try').length") == 2
        assert tab.evaluate(OVERFLOWING.replace("article pre", "pre")) == []
