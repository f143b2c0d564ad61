"""The human docs pages: one registry of pages, one view, and the context each page needs.

Every figure a page states comes from what the apps registered (``attest.registry``) or
the code itself, so a page cannot say one thing while the service does another. Pages link
only to routes that exist: a page joins the navigation (and gets a URL) by joining ``PAGES``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import path, reverse
from django.views.decorators.http import require_safe

from attest import registry
from attest_core.check_findings import EXIT_CODES, FAILURE_KINDS
from attest_core.jws import ALGORITHM, REASONS, RECEIPT_TYP
from attest_core.passages import MAX_PASSAGES, SCORER
from attest_core.payloads import PAYLOAD_VERSION
from attest_core.tree_head import TREE_HEAD_TYP
from billing.charging import CHARGING_RULES
from billing.facilitators import facilitator_name
from billing.pricing import MAX_TIMEOUT_SECONDS, PRICED_ROUTES, RAIL
from billing.services.claims import UNCHARGED_RUNS_PER_AUTHORIZATION
from citations.api.serializers import MAX_MESSAGE_BYTES, MAX_MESSAGES, RecallIn, ResolveIn
from citations.extract.extractor import EXTRACTOR_VERSION
from citations.extract.predicates import BUILTIN_NAMES, BUILTIN_PREDICATES
from citations.selectors import (
    CONTEXT_BYTES,
    INVENTORY_DEFAULT_LIMIT,
    INVENTORY_MAX_LIMIT,
    PAGE_BYTES,
)
from citations.selectors.web_evidence import REASONS as WEB_EVIDENCE_REASONS
from citations.services.placement import AUTHORED
from citations.services.predicates import DESCRIPTION_MAX_CHARS as PREDICATE_DESCRIPTION_MAX
from citations.services.predicates import NAME_PATTERN as PREDICATE_NAME_PATTERN
from verification.api.serializers import VerifyQuoteInput
from verification.engine.match import FUZZY_WORK_PER_CALL
from verification.engine.pace import BUDGETS
from verification.network.addresses import MAX_URL_LENGTH
from verification.pipeline.batches import BATCH_FUZZY_WORK, MAX_CITATIONS, MAX_QUOTES
from verification.pipeline.samples import SAMPLE_QUOTES, sample_page_url
from verification.pipeline.steps import MAX_QUOTE_CHARS, MODES
from wiring.docs_client import add_python_examples
from wiring.docs_guide import how_it_works
from wiring.docs_tables import price_of, prices
from wiring.mcp.tools import TOOLS


def _verify_quote() -> dict[str, Any]:
    threshold = VerifyQuoteInput().fields["threshold"]
    return {
        "errors": registry.errors("POST /v1/verify/quote"),
        "modes": MODES,
        "max_url": f"{MAX_URL_LENGTH:,}",
        "max_quote": f"{MAX_QUOTE_CHARS:,}",
        "threshold": threshold,
        "scorer": SCORER,
        "max_passages": MAX_PASSAGES,
        "fuzzy_work": f"{FUZZY_WORK_PER_CALL:,}",
        "price": price_of("verify/quote"),
        "sample_quotes": SAMPLE_QUOTES,
        "crossref_on": bool(settings.ATTEST_CROSSREF_URL),
        "crossref_paid": BUDGETS["paid"],
        "crossref_trial": BUDGETS["trial"],
    }


def _receipt_verify() -> dict[str, Any]:
    return {
        "errors": registry.errors("POST /v1/receipt/verify"),
        "reasons": sorted(REASONS.items()),
        "algorithm": ALGORITHM,
        "typ": RECEIPT_TYP,
        "version": PAYLOAD_VERSION,
        "page_claims": registry.table("page claims"),
        "result_claims": registry.table("result claims"),
        "passage_claims": [name for name, _ in registry.table("passage claims")],
        "sample_quote": SAMPLE_QUOTES["fuzzy"],
    }


def _receipt_check() -> dict[str, Any]:
    return {"kinds": FAILURE_KINDS, "sample_quote": SAMPLE_QUOTES["fuzzy"]}


def _transparency() -> dict[str, Any]:
    return {"head_typ": TREE_HEAD_TYP, "log_kind": EXIT_CODES["log"]}


def _payments() -> dict[str, Any]:
    return {
        "prices": prices(),
        "quote_price": price_of("verify/quote"),
        "rules": CHARGING_RULES,
        "errors": registry.errors("payment"),
        "network": settings.X402_NETWORK,
        "pay_to": settings.X402_PAY_TO,
        "rail": RAIL,
        "max_timeout": MAX_TIMEOUT_SECONDS,
        "uncharged_runs": UNCHARGED_RUNS_PER_AUTHORIZATION,
        "trial_calls": settings.ATTEST_TRIAL_CALLS_PER_DAY,
        "facilitator": facilitator_name(),
    }


def _limits() -> dict[str, Any]:
    return {"groups": registry.limits()}


def _batch(route: str, size: int) -> dict[str, Any]:
    return {
        "errors": registry.errors(f"POST /v1/{route}"),
        "price": price_of(route),
        "max_size": size,
        "trial_max_size": PRICED_ROUTES[route].trial_max_size,
        "fuzzy_work": f"{FUZZY_WORK_PER_CALL:,}",
        "batch_fuzzy_work": f"{BATCH_FUZZY_WORK:,}",
        "modes": MODES,
        "max_quote": f"{MAX_QUOTE_CHARS:,}",
        "sample_quotes": SAMPLE_QUOTES,
    }


def _verify_quotes() -> dict[str, Any]:
    return _batch("verify/quotes", MAX_QUOTES)


def _verify_citations() -> dict[str, Any]:
    return _batch("verify/citations", MAX_CITATIONS)


def _fetch() -> dict[str, Any]:
    return {"errors": registry.errors("POST /v1/fetch"), "price": price_of("fetch")}


def _ledger_ingest() -> dict[str, Any]:
    return {
        "errors": registry.errors("POST /v1/observations"),
        "max_messages": MAX_MESSAGES,
        "max_message_bytes": f"{MAX_MESSAGE_BYTES:,}",
        "predicates": BUILTIN_PREDICATES,
        "extractor_version": EXTRACTOR_VERSION,
    }


def _ledger_recall() -> dict[str, Any]:
    fields = RecallIn().fields
    return {
        "errors": registry.errors("POST /v1/recall"),
        "statuses": registry.table("fact statuses"),
        "limit": fields["limit"],
        "predicates": BUILTIN_NAMES,
    }


def _ledger_resolve() -> dict[str, Any]:
    return {
        "errors": registry.errors("POST /v1/citations/resolve"),
        "limit": ResolveIn().fields["limit"],
        "page_kib": PAGE_BYTES // 1024,
        "context_bytes": CONTEXT_BYTES,
    }


def _ledger_rebuilds() -> dict[str, Any]:
    return {"errors": registry.errors("POST /v1/rebuilds"), "extractor_version": EXTRACTOR_VERSION}


def _ledger(route: str) -> Callable[[], dict[str, Any]]:
    def context() -> dict[str, Any]:
        return {
            "errors": registry.errors(route),
            "inventory_default": INVENTORY_DEFAULT_LIMIT,
            "inventory_max": INVENTORY_MAX_LIMIT,
            "authored": AUTHORED,
        }

    return context


def _ledger_predicates() -> dict[str, Any]:
    return {
        "errors": registry.errors("POST /v1/predicates"),
        "builtins": BUILTIN_PREDICATES,
        "first": BUILTIN_PREDICATES[0],
        "pattern": PREDICATE_NAME_PATTERN,
        "description_max": PREDICATE_DESCRIPTION_MAX,
    }


def _web_evidence() -> dict[str, Any]:
    return {"errors": registry.errors("POST /v1/facts"), "reasons": WEB_EVIDENCE_REASONS}


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


def _mcp() -> dict[str, Any]:
    return {"tools": TOOLS}


# The navigation's order. A page is linked from anywhere only once it is listed here.
PAGES: tuple[DocPage, ...] = (
    DocPage(
        "how-it-works",
        "How it works",
        "Page verdicts and their signals, normalisation, matching, and what a none means.",
        how_it_works,
    ),
    DocPage(
        "verify-quote",
        "Verify a quote",
        "POST /v1/verify/quote: is a quote on a page, where, and is the page real?",
        _verify_quote,
        route="POST /v1/verify/quote",
    ),
    DocPage(
        "verify-quotes",
        "Verify quotes on one page",
        "POST /v1/verify/quotes: up to 20 quotes checked against one fetch of a page.",
        _verify_quotes,
        route="POST /v1/verify/quotes",
    ),
    DocPage(
        "verify-citations",
        "Verify citations",
        "POST /v1/verify/citations: up to 10 quote and URL pairs in one batch.",
        _verify_citations,
        route="POST /v1/verify/citations",
    ),
    DocPage(
        "fetch",
        "Fetch a page",
        "POST /v1/fetch: a page's verdict and its normalised text, signed.",
        _fetch,
        route="POST /v1/fetch",
    ),
    DocPage(
        "receipt-verify",
        "Check a receipt",
        "POST /v1/receipt/verify and the public keys: what a receipt signs.",
        _receipt_verify,
        group="Receipts",
        route="POST /v1/receipt/verify",
    ),
    DocPage(
        "receipt-check",
        "Check a receipt offline",
        "python -m receipts.check: the signature, the text and the quote, without us.",
        _receipt_check,
        group="Receipts",
    ),
    DocPage(
        "transparency",
        "Transparency log",
        "Every receipt in one public Merkle log: signed heads, proofs, the monitor.",
        _transparency,
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
        _mcp,
        group="Service",
    ),
    DocPage(
        "payments",
        "Payments",
        "Prices, x402, the free trial and what is charged.",
        _payments,
        group="Service",
    ),
    DocPage(
        "limits",
        "Limits",
        "Every size, time and rate limit, and what happens past it.",
        _limits,
        group="Service",
    ),
    # The fact ledger: one page per route under /docs/ledger/.
    DocPage(
        "ledger/ingest",
        "Ingest messages",
        "POST /v1/observations: store messages; facts come out, tied to their bytes.",
        _ledger_ingest,
        group="Fact ledger",
        route="POST /v1/observations",
    ),
    DocPage(
        "ledger/recall",
        "Recall facts",
        "POST /v1/recall: a subject's facts, now or as of a valid and a known time.",
        _ledger_recall,
        group="Fact ledger",
        route="POST /v1/recall",
    ),
    DocPage(
        "ledger/resolve",
        "Resolve a fact",
        "POST /v1/citations/resolve: a fact with its evidence, re-read from the bytes.",
        _ledger_resolve,
        group="Fact ledger",
        route="POST /v1/citations/resolve",
    ),
    DocPage(
        "ledger/retraction",
        "Retraction",
        "POST /v1/facts/{id}/retract: withdraw a fact, or correct it with a replacement.",
        _ledger("POST /v1/facts/{fact_id}/retract"),
        group="Fact ledger",
        route="POST /v1/facts/{fact_id}/retract",
    ),
    DocPage(
        "ledger/authored-records",
        "Authored records",
        "POST /v1/facts: a person states a fact directly, and the evidence says who.",
        _ledger("POST /v1/facts"),
        group="Fact ledger",
        route="POST /v1/facts",
    ),
    DocPage(
        "ledger/predicates",
        "Predicates",
        "GET and POST /v1/predicates: the built-in predicates, and declaring your own.",
        _ledger_predicates,
        group="Fact ledger",
        route="POST /v1/predicates",
    ),
    DocPage(
        "ledger/web-evidence",
        "Web evidence",
        "Verify a quote, record the fact with its receipt, resolve it, check it offline.",
        _web_evidence,
        group="Fact ledger",
    ),
    DocPage(
        "ledger/record-inventory",
        "Record inventory",
        "GET /v1/facts: every fact of a project, newest first, a page at a time.",
        _ledger("GET /v1/facts"),
        group="Fact ledger",
        route="GET /v1/facts",
    ),
    DocPage(
        "ledger/rebuilds",
        "Rebuild facts",
        "POST /v1/rebuilds: read messages again in a new generation, one source or all.",
        _ledger_rebuilds,
        group="Fact ledger",
        route="POST /v1/rebuilds",
    ),
    DocPage(
        "ledger/erasures",
        "Erase",
        "POST /v1/erasures: delete a message or a subject's content; tombstones answer 404.",
        _ledger("POST /v1/erasures"),
        group="Fact ledger",
        route="POST /v1/erasures",
    ),
    DocPage(
        "ledger/subject-export",
        "Export a subject",
        "GET /v1/subjects/{subject}/export: everything about a subject, NDJSON, one snapshot.",
        _ledger("GET /v1/subjects/{subject}/export"),
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
    }


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


urlpatterns = [
    path("docs", index, name="docs"),
    *(path(f"docs/{doc.slug}", page, {"doc": doc}, name=doc.url_name) for doc in PAGES),
]
