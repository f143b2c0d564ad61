"""The human docs pages: one registry of pages, one view, and the context each page needs.

Every figure a page states comes from what the apps registered (``attest.registry``) or
the code itself, so a page cannot say one thing while the service does another. Pages link
only to routes that exist: a page joins the navigation (and gets a URL) by joining ``PAGES``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib import import_module
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponsePermanentRedirect
from django.shortcuts import render
from django.urls import path, reverse
from django.views.decorators.http import require_safe

from billing.pricing import priced_route
from wiring.docs_client import add_python_examples


def _batch(route: str) -> int | None:
    """How many items one payment for a batch route buys (the price list holds it)."""
    return priced_route(route).max_size


@dataclass(frozen=True)
class DocPage:
    slug: str  # the path under /docs/, such as "fetch" or "ledger/recall"
    title: str
    summary: str
    context: Callable[[], dict[str, Any]]
    group: str = "Verification"  # the navigation's heading the page sits under
    route: str = ""  # "POST /v1/fetch" for a page about one route: its errors are checked

    @property
    def url_name(self) -> str:
        return f"docs-{self.slug.replace('/', '-')}"

    @property
    def template(self) -> str:
        """docs/fetch.html, docs/verify_quote.html, docs/ledger/recall.html"""
        return f"docs/{self.slug.replace('-', '_')}.html"


def _context(name: str, *args: str) -> Callable[[], dict[str, Any]]:
    """The page context ``wiring.docs_context.<name>(*args)``, imported when a page renders."""

    def context() -> dict[str, Any]:
        return getattr(import_module("wiring.docs_context"), name)(*args)

    return context


# The navigation's order. A page is linked from anywhere only once it is listed here.
PAGES: tuple[DocPage, ...] = (
    DocPage(
        "how-it-works",
        "How it works",
        "Page verdicts and their signals, normalisation, matching, and what a none means.",
        _context("how_it_works"),
    ),
    DocPage(
        "verify-quote",
        "Verify a quote",
        "POST /v1/verify/quote: is a quote on a page, where, and is the page real?",
        _context("verify_quote"),
        route="POST /v1/verify/quote",
    ),
    DocPage(
        "verify-quotes",
        "Verify quotes on one page",
        f"POST /v1/verify/quotes: up to {_batch('verify/quotes')} quotes checked against one "
        "fetch of a page.",
        _context("verify_quotes"),
        route="POST /v1/verify/quotes",
    ),
    DocPage(
        "verify-citations",
        "Verify citations",
        f"POST /v1/verify/citations: up to {_batch('verify/citations')} quote and URL pairs in "
        "one batch.",
        _context("verify_citations"),
        route="POST /v1/verify/citations",
    ),
    DocPage(
        "fetch",
        "Fetch a page",
        "POST /v1/fetch: a page's verdict and its normalised text, signed.",
        _context("fetch"),
        route="POST /v1/fetch",
    ),
    DocPage(
        "receipt-verify",
        "Check a receipt",
        "POST /v1/receipt/verify and the public keys: what a receipt signs.",
        _context("receipt_verify"),
        group="Receipts",
        route="POST /v1/receipt/verify",
    ),
    DocPage(
        "receipt-check",
        "Check a receipt offline",
        "python -m receipts.check: the signature, the text and the quote, without us.",
        _context("receipt_check"),
        group="Receipts",
    ),
    DocPage(
        "transparency",
        "Transparency log",
        "Every receipt in one public Merkle log: signed heads, proofs, the monitor.",
        _context("transparency"),
        group="Receipts",
    ),
    DocPage(
        "client",
        "Python client and CLI",
        "pip install ./clients/python: every route from Python, payment, the attest command.",
        dict,
        group="Service",
    ),
    DocPage(
        "mcp",
        "MCP server",
        "POST /mcp and attest mcp: the tools for an MCP client, paid over x402.",
        _context("mcp"),
        group="Service",
    ),
    DocPage(
        "payments",
        "Payments",
        "Prices, x402, the free trial and what is charged.",
        _context("payments"),
        group="Service",
    ),
    DocPage(
        "credits",
        "Prepaid credit",
        "POST and GET /v1/credits: a balance bought once over x402 pays calls with a header.",
        _context("credits"),
        group="Service",
    ),
    DocPage(
        "limits",
        "Limits",
        "Every size, time and rate limit, and what happens past it.",
        _context("limits"),
        group="Service",
    ),
    # The fact ledger: one page per route under /docs/ledger/.
    DocPage(
        "ledger/ingest",
        "Ingest messages",
        "POST /v1/observations: store messages; facts come out, tied to their bytes.",
        _context("ledger_ingest"),
        group="Fact ledger",
        route="POST /v1/observations",
    ),
    DocPage(
        "ledger/recall",
        "Recall facts",
        "POST /v1/recall: a subject's facts, now or as of a time, or ranked by a question.",
        _context("ledger_recall"),
        group="Fact ledger",
        route="POST /v1/recall",
    ),
    DocPage(
        "ledger/resolve",
        "Resolve a fact",
        "POST /v1/citations/resolve: a fact with its evidence, re-read from the bytes.",
        _context("ledger_resolve"),
        group="Fact ledger",
        route="POST /v1/citations/resolve",
    ),
    DocPage(
        "ledger/retraction",
        "Retraction",
        "POST /v1/facts/{id}/retract: withdraw a fact, or correct it with a replacement.",
        _context("ledger", "POST /v1/facts/{fact_id}/retract"),
        group="Fact ledger",
        route="POST /v1/facts/{fact_id}/retract",
    ),
    DocPage(
        "ledger/authored-records",
        "Authored records",
        "POST /v1/facts: a person states a fact directly, and the evidence says who.",
        _context("ledger", "POST /v1/facts"),
        group="Fact ledger",
        route="POST /v1/facts",
    ),
    DocPage(
        "ledger/predicates",
        "Predicates",
        "GET and POST /v1/predicates: the built-in predicates, and declaring your own.",
        _context("ledger_predicates"),
        group="Fact ledger",
        route="POST /v1/predicates",
    ),
    DocPage(
        "ledger/web-evidence",
        "Web evidence",
        "Verify a quote, record the fact with its receipt, resolve it, check it offline.",
        _context("web_evidence"),
        group="Fact ledger",
    ),
    DocPage(
        "ledger/record-inventory",
        "Record inventory",
        "GET /v1/facts: every fact of a project, newest first, a page at a time.",
        _context("ledger", "GET /v1/facts"),
        group="Fact ledger",
        route="GET /v1/facts",
    ),
    DocPage(
        "ledger/changes",
        "Change feed",
        "POST /v1/changes: what changed in the ledger, in commit order, to keep a copy in step.",
        _context("ledger_feed", "POST /v1/changes"),
        group="Fact ledger",
        route="POST /v1/changes",
    ),
    DocPage(
        "ledger/subjects",
        "Subjects",
        "GET /v1/subjects: the project's subjects, with their fact counts and latest message.",
        _context("ledger_feed", "GET /v1/subjects"),
        group="Fact ledger",
        route="GET /v1/subjects",
    ),
    DocPage(
        "ledger/rebuilds",
        "Rebuild facts",
        "POST /v1/rebuilds: read messages again in a new generation, one source or all.",
        _context("ledger_rebuilds"),
        group="Fact ledger",
        route="POST /v1/rebuilds",
    ),
    DocPage(
        "ledger/erasures",
        "Erase",
        "POST /v1/erasures: delete a message or a subject's content; tombstones answer 404.",
        _context("ledger", "POST /v1/erasures"),
        group="Fact ledger",
        route="POST /v1/erasures",
    ),
    DocPage(
        "ledger/subject-export",
        "Export a subject",
        "GET /v1/subjects/{subject}/export: everything about a subject, NDJSON, one snapshot.",
        _context("ledger", "GET /v1/subjects/{subject}/export"),
        group="Fact ledger",
        route="GET /v1/subjects/{subject}/export",
    ),
)


def groups() -> list[tuple[str, list[DocPage]]]:
    """PAGES under their headings, in the order each heading first appears."""
    grouped: dict[str, list[DocPage]] = {}
    for doc in PAGES:
        grouped.setdefault(doc.group, []).append(doc)
    return list(grouped.items())


def _common(request: HttpRequest, current: DocPage | None) -> dict[str, Any]:
    from verification.pipeline.samples import sample_page_url

    scheme, host = request.scheme, request.get_host()
    at = PAGES.index(current) if current else None
    return {
        "previous": PAGES[at - 1] if at else None,
        "next": PAGES[at + 1] if at is not None and at + 1 < len(PAGES) else None,
        "pages": PAGES,
        "nav_groups": groups(),
        "current": current,
        "base_url": f"{scheme}://{host}",
        "public_url": settings.ATTEST_PUBLIC_URL,
        "sample_page_url": sample_page_url(),
        "sample_page_allow": _host_port(sample_page_url()),
        "sample_missing_url": sample_page_url("missing"),
    }


def _host_port(url: str) -> str:
    """``url``'s host:port as ATTEST_FETCH_ALLOW takes it, the port written out."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{parts.hostname}:{port}"


@require_safe
def index(request: HttpRequest) -> HttpResponse:
    return render(request, "docs/index.html", _common(request, None))


@require_safe
def page(request: HttpRequest, *, doc: DocPage) -> HttpResponse:
    context = {**_common(request, doc), **doc.context()}
    response = render(request, doc.template, context)
    markup = add_python_examples(response.content.decode(), client_docs=reverse("docs-client"))
    response.content = markup.encode()
    return response


@require_safe
def without_slash(request: HttpRequest, *, to: str) -> HttpResponse:
    """``/docs/`` and ``/docs/<page>/``: the page's own address (a JSON 404 was all it got)."""
    query = request.META.get("QUERY_STRING", "")
    return HttpResponsePermanentRedirect(reverse(to) + (f"?{query}" if query else ""))


urlpatterns = [
    path("docs", index, name="docs"),
    path("docs/", without_slash, {"to": "docs"}),
    path("docs/api/", without_slash, {"to": "api-docs"}),
    *(path(f"docs/{doc.slug}", page, {"doc": doc}, name=doc.url_name) for doc in PAGES),
    *(path(f"docs/{doc.slug}/", without_slash, {"to": doc.url_name}) for doc in PAGES),
]
