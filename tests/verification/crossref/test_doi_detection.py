"""Which DOI a fetched page is about, in the seed's order, and what the receipt then signs."""

from __future__ import annotations

import httpx
import jwt
import pytest

from tests.verification.conftest import page
from verification.network.fetch import FetchResult, Hop
from verification.pipeline.pages import build_pages

PAPER = (
    "<html><head><title>A paper</title>"
    "<meta name='citation_doi' content='10.5555/Version.Of.Record'></head>"
    "<body><p>The paper's text, long enough to read as content.</p></body></html>"
)
BLOG_POST = (
    "<html><head><title>My thoughts on a paper</title></head><body>"
    "<p>I read <a href='https://doi.org/10.5555/someone.elses.paper'>this paper</a> today "
    "and here is what I think of it.</p></body></html>"
)


def _fetched(body: str, *, requested: str, final: str, redirects=(), outcome="ok") -> FetchResult:
    return FetchResult(
        requested_url=requested,
        final_url=final,
        outcome=outcome,
        http_status=200 if outcome == "ok" else None,
        headers=httpx.Headers({"content-type": "text/html; charset=utf-8"}),
        body=body.encode(),
        redirects=[Hop(url=url, status=302, address="192.0.2.1") for url in redirects],
    )


def test_a_cited_doi_org_link_keeps_its_doi_after_the_redirect():
    fetched = _fetched(
        PAPER,
        requested="https://doi.org/10.5555/cited",
        final="https://publisher.example/article/77",
        redirects=["https://doi.org/10.5555/cited"],
    )
    (built,) = build_pages([fetched], edge=False)
    # The page's meta tag names another DOI; the link the citation gave wins.
    assert (built.doi, built.doi_source) == ("10.5555/cited", "url")


def test_without_a_doi_org_link_the_page_meta_tag_gives_the_doi():
    fetched = _fetched(
        PAPER,
        requested="https://publisher.example/doi/10.5555/x",
        final="https://publisher.example/doi/10.5555/x",
    )
    (built,) = build_pages([fetched], edge=False)
    assert (built.doi, built.doi_source) == ("10.5555/version.of.record", "page")


def test_a_blog_post_linking_one_paper_does_not_take_its_doi():
    fetched = _fetched(
        BLOG_POST, requested="https://blog.example/post", final="https://blog.example/post"
    )
    (built,) = build_pages([fetched], edge=False)
    assert (built.doi, built.doi_source) == (None, None)


def test_a_doi_org_link_that_timed_out_still_names_its_doi():
    fetched = _fetched(
        "",
        requested="https://doi.org/10.5555/slow",
        final="https://doi.org/10.5555/slow",
        outcome="timeout",
    )
    (built,) = build_pages([fetched], edge=False)
    assert built.content_kind == "timeout"
    assert (built.doi, built.doi_source) == ("10.5555/slow", "url")


@pytest.mark.django_db
def test_the_receipt_signs_no_doi_for_a_blog_post_linking_a_paper(api, pages):
    pages.routes["/post"] = page(BLOG_POST)
    response = api.post(
        "/v1/verify/quote",
        {"url": pages.url("/post"), "quote": "here is what I think of it"},
        format="json",
    )
    assert response.status_code == 200
    body = response.json()
    assert body["page"]["doi"] is None
    claims = jwt.decode(body["receipt"], options={"verify_signature": False})
    assert claims["pages"][0]["doi"] is None


@pytest.mark.django_db
def test_the_receipt_signs_the_page_meta_doi(api, pages):
    pages.routes["/paper"] = page(PAPER)
    response = api.post(
        "/v1/verify/quote", {"url": pages.url("/paper"), "quote": "the paper's text"}, format="json"
    )
    claims = jwt.decode(response.json()["receipt"], options={"verify_signature": False})
    assert claims["pages"][0]["doi"] == "10.5555/version.of.record"
