"""Debian's Chromium driven by Playwright, the one way every browser test starts it.

``.ci/run`` installs the chromium package and the playwright Python package; Playwright's
own browser download is never used (a closed network cannot fetch it).
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None,
    reason="Debian's chromium is not installed (apt-get install chromium); .ci/run installs it",
)


@contextlib.contextmanager
def chromium(profile: Path, **context) -> Iterator:
    """A persistent context on a fresh user-data-dir; closed however the test ends."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch_persistent_context(
            str(profile),
            executable_path=CHROMIUM,
            headless=True,
            args=CHROMIUM_FLAGS,
            **context,
        )
        try:
            yield browser
        finally:
            browser.close()
