"""The human docs pages: one registry of pages, one view, and the context each page needs.

Every figure a page states comes from ``attest.docs_tables`` or the code itself, so a page
cannot say one thing while the service does another. Pages link only to routes that exist:
a page joins the navigation (and gets a URL) by joining ``PAGES``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import path
from django.views.decorators.http import require_safe

from attest.docs_tables import (
    PAYMENT_ERRORS,
    RECEIPT_VERIFY_ERRORS,
    VERIFY_QUOTE_ERRORS,
    claim_rows,
    ledger_errors,
    limits,
    price_of,
    prices,
)
from billing.charging import CHARGING_RULES
from billing.pricing import MAX_TIMEOUT_SECONDS, RAIL
from citations.extract.extractor import EXTRACTOR_VERSION
from citations.selectors import INVENTORY_DEFAULT_LIMIT, INVENTORY_MAX_LIMIT
from citations.services.placement import AUTHORED
from receipts.core.check_findings import FAILURE_KINDS
from receipts.core.jws import ALGORITHM, REASONS, RECEIPT_TYP
from receipts.core.payloads import PAYLOAD_VERSION, PageClaims, PassageClaims, ResultClaims
from verification.addresses import MAX_URL_LENGTH
from verification.engine.match import FUZZY_WORK_PER_CALL
from verification.engine.passages import MAX_PASSAGES, SCORER
from verification.pipeline import MAX_QUOTE_CHARS, MODES
from verification.samples import SAMPLE_QUOTES, sample_page_url
from verification.serializers import VerifyQuoteInput


def _verify_quote() -> dict[str, Any]:
    threshold = VerifyQuoteInput().fields["threshold"]
    return {
        "errors": VERIFY_QUOTE_ERRORS,
        "modes": MODES,
        "max_url": f"{MAX_URL_LENGTH:,}",
        "max_quote": f"{MAX_QUOTE_CHARS:,}",
        "threshold": threshold,
        "scorer": SCORER,
        "max_passages": MAX_PASSAGES,
        "fuzzy_work": f"{FUZZY_WORK_PER_CALL:,}",
        "price": price_of("verify/quote"),
        "sample_quotes": SAMPLE_QUOTES,
    }


def _receipt_verify() -> dict[str, Any]:
    return {
        "errors": RECEIPT_VERIFY_ERRORS,
        "reasons": sorted(REASONS.items()),
        "algorithm": ALGORITHM,
        "typ": RECEIPT_TYP,
        "version": PAYLOAD_VERSION,
        "page_claims": claim_rows(PageClaims),
        "result_claims": claim_rows(ResultClaims),
        "passage_claims": [name for name, _ in claim_rows(PassageClaims)],
        "sample_quote": SAMPLE_QUOTES["fuzzy"],
    }


def _receipt_check() -> dict[str, Any]:
    return {"kinds": FAILURE_KINDS, "sample_quote": SAMPLE_QUOTES["fuzzy"]}


def _payments() -> dict[str, Any]:
    return {
        "prices": prices(),
        "quote_price": price_of("verify/quote"),
        "rules": CHARGING_RULES,
        "errors": PAYMENT_ERRORS,
        "network": settings.X402_NETWORK,
        "pay_to": settings.X402_PAY_TO,
        "rail": RAIL,
        "max_timeout": MAX_TIMEOUT_SECONDS,
        "trial_calls": settings.ATTEST_TRIAL_CALLS_PER_DAY,
    }


def _limits() -> dict[str, Any]:
    return {"groups": limits()}


def _ledger_rebuilds() -> dict[str, Any]:
    return {"errors": ledger_errors("rebuild"), "extractor_version": EXTRACTOR_VERSION}


def _ledger(route: str) -> Callable[[], dict[str, Any]]:
    def context() -> dict[str, Any]:
        return {
            "errors": ledger_errors(route),
            "inventory_default": INVENTORY_DEFAULT_LIMIT,
            "inventory_max": INVENTORY_MAX_LIMIT,
            "authored": AUTHORED,
        }

    return context


@dataclass(frozen=True)
class DocPage:
    slug: str  # the path under /docs/
    title: str
    summary: str
    context: Callable[[], dict[str, Any]]

    @property
    def url_name(self) -> str:
        return f"docs-{self.slug}"

    @property
    def template(self) -> str:
        return f"docs/{self.slug.replace('-', '_')}.html"


# The navigation's order. A page is linked from anywhere only once it is listed here.
PAGES: tuple[DocPage, ...] = (
    DocPage(
        "verify-quote",
        "Verify a quote",
        "POST /v1/verify/quote: is a quote on a page, where, and is the page real?",
        _verify_quote,
    ),
    DocPage(
        "receipt-verify",
        "Check a receipt",
        "POST /v1/receipt/verify and the public keys: what a receipt signs.",
        _receipt_verify,
    ),
    DocPage(
        "receipt-check",
        "Check a receipt offline",
        "python -m receipts.check: the signature, the text and the quote, without us.",
        _receipt_check,
    ),
    DocPage("payments", "Payments", "Prices, x402, the free trial and what is charged.", _payments),
    DocPage(
        "limits", "Limits", "Every size, time and rate limit, and what happens past it.", _limits
    ),
    DocPage(
        "ledger/retraction",
        "Retraction",
        "POST /v1/facts/{id}/retract: withdraw a fact, or correct it with a replacement.",
        _ledger("retract"),
    ),
    DocPage(
        "ledger/authored-records",
        "Authored records",
        "POST /v1/facts: a person states a fact directly, and the evidence says who.",
        _ledger("authored"),
    ),
    DocPage(
        "ledger/record-inventory",
        "Record inventory",
        "GET /v1/facts: every fact of a project, newest first, a page at a time.",
        _ledger("inventory"),
    ),
    DocPage(
        "ledger/rebuilds",
        "Rebuild facts",
        "POST /v1/rebuilds: read messages again in a new generation, one source or all.",
        _ledger_rebuilds,
    ),
    DocPage(
        "ledger/erasures",
        "Erase",
        "POST /v1/erasures: delete a message or a subject's content; tombstones answer 404.",
        _ledger("erasure"),
    ),
    DocPage(
        "ledger/subject-export",
        "Export a subject",
        "GET /v1/subjects/{subject}/export: everything about a subject, NDJSON, one snapshot.",
        _ledger("export"),
    ),
)


def _common(request: HttpRequest, current: DocPage | None) -> dict[str, Any]:
    scheme, host = request.scheme, request.get_host()
    return {
        "pages": PAGES,
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
    return render(request, doc.template, context)


urlpatterns = [
    path("docs", index, name="docs"),
    *(path(f"docs/{doc.slug}", page, {"doc": doc}, name=doc.url_name) for doc in PAGES),
]
