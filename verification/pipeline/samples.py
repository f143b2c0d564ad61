"""The free samples: the real pipeline on our own demo pages' bytes, in process, no network."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import httpx
from django.conf import settings

from verification.network.fetch import FetchResult
from verification.pipeline import batches
from verification.pipeline.services import quote_answer
from verification.pipeline.steps import MatchOptions, normalised_quote

ROUTE_SAMPLE = "sample/quote"
ROUTE_SAMPLE_CITATIONS = "sample/citations"

SAMPLES_DIR = Path(__file__).resolve().parent / "samples"
SAMPLE_PAGES = {"demo": "demo_page.html", "missing": "not_found.html"}
SAMPLE_QUOTES = {
    # One word differs from the page ("fell" for "dropped"): a fuzzy match.
    "fuzzy": "nitrate levels fell 18 % in 2025, after three years of steady increases",
    "exact": "64 percent of beach samples met the bathing standard",
    "passages": "The port authority reported an 18 percent drop in nitrate levels during 2025",
}
# The citations sample: a fuzzy quote and a quote the page does not hold on the demo page,
# and a quote on the demo 404 page (a page result, not an error).
SAMPLE_CITATIONS = (
    ("demo", SAMPLE_QUOTES["fuzzy"]),
    ("demo", "the harbour was closed to shipping for the whole of 2025"),
    ("missing", SAMPLE_QUOTES["exact"]),
)


def sample_page_bytes(name: str = "demo") -> bytes:
    return (SAMPLES_DIR / SAMPLE_PAGES[name]).read_bytes()


def sample_page_url(name: str = "demo") -> str:
    """The demo page's URL under ATTEST_PUBLIC_URL, the one base URL the service uses.

    A sample signs the same URL wherever it was asked, the URL every receipt and offer
    of this service is issued under.
    """
    path = "/v1/sample/page" if name == "demo" else "/v1/sample/missing"
    return settings.ATTEST_PUBLIC_URL + path


def _sample_fetch(name: str, url: str) -> FetchResult:
    """What fetching our own demo page would give, built from its bytes."""
    return FetchResult(
        requested_url=url,
        final_url=url,
        outcome="ok",
        http_status=200 if name == "demo" else 404,
        headers=httpx.Headers({"content-type": "text/html; charset=utf-8"}),
        body=sample_page_bytes(name),
    )


def sample_quote(
    *, mode: str = "fuzzy", page_name: str = "demo", request_id: str
) -> dict[str, Any]:
    """verify/quote's pipeline on one demo page: no network, no charge."""
    url = sample_page_url(page_name)
    return quote_answer(
        route=ROUTE_SAMPLE,
        request_id=request_id,
        tier="sample",
        fetched_by=lambda: _sample_fetch(page_name, url),
        url=url,
        raw_quote=SAMPLE_QUOTES[mode],
        options=MatchOptions(mode=mode),
    )


def sample_citations(*, request_id: str) -> dict[str, Any]:
    """verify/citations' pipeline on both demo pages: no network, no charge, no limits."""
    names = list(dict.fromkeys(name for name, _ in SAMPLE_CITATIONS))
    urls = [sample_page_url(name) for name in names]
    raw_quotes = [quote for _, quote in SAMPLE_CITATIONS]
    batch = batches.AdmittedBatch(
        route=ROUTE_SAMPLE_CITATIONS,
        urls=urls,
        fetchers=[partial(_sample_fetch, name, url) for name, url in zip(names, urls, strict=True)],
        items=batches.batch_items(
            [names.index(name) for name, _ in SAMPLE_CITATIONS],
            raw_quotes,
            [normalised_quote(q, mode="fuzzy") for q in raw_quotes],
        ),
        options=MatchOptions(),
        client_ip="",
        limited=False,
    )
    run = batches.batch_run(batch=batch, request_id=request_id, tier="sample")
    return batches.citations_answer(run, batch, tier="sample")
