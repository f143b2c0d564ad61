"""What verification registers for the docs pages: its limits (its routes' errors are
registered by ``verification.api.route_errors``, imported here so discovery finds them)."""

from __future__ import annotations

from typing import cast

from django.conf import settings
from rest_framework.fields import FloatField

from attest.errors import InvalidRequest, NotOnEdge
from attest.registry import (
    Limit,
    bytes_text,
    refused_text,
    register_limits,
    seconds_text,
)
from attest_core.passages import MAX_MISSING, MAX_PASSAGES, TEXT_CAP
from verification.api import route_errors  # noqa: F401 (registers the routes' errors)
from verification.api.serializers import MAX_RAW_QUOTE_CHARS, VerifyQuoteInput
from verification.capacity.pdf_pool import PDF_SECONDS, PDF_WORKERS
from verification.capacity.pdf_worker import PDF_WORKER_MEMORY
from verification.capacity.queues import UNCHARGED_FAILURES, UNPAID_CHECKS_RETRY_AFTER
from verification.crossref.lookups import CACHE_FOR, LOOKUPS_DEADLINE_SECONDS
from verification.engine.html_text import MAX_HTML_NODES
from verification.engine.match import FUZZY_WORK_PER_CALL, MAX_WIDE_ALPHABET_CELLS
from verification.engine.pace import BUDGETS
from verification.engine.pdf_text import (
    MAX_CHARS,
    MAX_CONTENT_STREAM_BYTES,
    MAX_DECODED_STREAM_BYTES,
    MAX_PAGES,
)
from verification.network.addresses import MAX_URL_LENGTH
from verification.network.fetch import MAX_REDIRECTS
from verification.network.politeness import MAX_CRAWL_DELAY
from verification.network.robots import MAX_ROBOTS_BYTES, ROBOTS_DEADLINE
from verification.pipeline.batches import BATCH_FUZZY_WORK, MAX_CITATIONS, MAX_QUOTES
from verification.pipeline.steps import MAX_QUOTE_CHARS, MatchTooCostlyError


def _requests() -> list[Limit]:
    threshold = cast(FloatField, VerifyQuoteInput().fields["threshold"])
    return [
        Limit("URL length", f"{MAX_URL_LENGTH:,} characters", refused_text(InvalidRequest)),
        Limit(
            "Quote or claim, after normalisation",
            f"{MAX_QUOTE_CHARS:,} characters",
            refused_text(InvalidRequest),
        ),
        Limit(
            "Quote or claim as sent (refused unread)",
            f"{MAX_RAW_QUOTE_CHARS:,} characters",
            refused_text(InvalidRequest),
        ),
        Limit(
            "Fuzzy threshold",
            f"{threshold.min_value:g} to {threshold.max_value:g}",
            refused_text(InvalidRequest),
        ),
    ]


def _fetching() -> list[Limit]:
    return [
        Limit(
            "Whole fetch (every redirect hop and body read)",
            seconds_text(settings.ATTEST_FETCH_DEADLINE),
            "content_kind timeout: a charged result",
            "ATTEST_FETCH_DEADLINE",
        ),
        Limit(
            "Decoded page body",
            bytes_text(settings.ATTEST_FETCH_MAX_BYTES),
            "content_kind too_large: a charged result, nothing matched",
            "ATTEST_FETCH_MAX_BYTES",
        ),
        Limit(
            "Elements, attributes and comments of one HTML page (counted before it is parsed)",
            f"{MAX_HTML_NODES:,}",
            "content_kind too_large (too_many_elements): a charged result, nothing matched",
        ),
        Limit(
            "Redirects followed",
            str(MAX_REDIRECTS),
            "content_kind http_error (too_many_redirects): a charged result",
        ),
        Limit("robots.txt read", bytes_text(MAX_ROBOTS_BYTES), "the rest is not parsed"),
        Limit(
            "Whole robots.txt fetch, one at a time per site across every process",
            seconds_text(ROBOTS_DEADLINE),
            "the site counts as unreachable: every path disallowed (403 robots_disallowed) "
            "for 10 minutes; other checks wait for the one fetch's answer",
        ),
        Limit(
            "Fetches per site (scheme, host and port), across every process",
            settings.ATTEST_HOST_RATE,
            "429 rate_limited (details.reason host_rate_limited, details.host) with "
            "Retry-After: before payment, or for a redirect after it (the whole call fails); "
            "not charged",
            "ATTEST_HOST_RATE",
        ),
        Limit(
            "robots.txt Crawl-delay for AttestBot, honoured up to",
            seconds_text(MAX_CRAWL_DELAY),
            "one fetch of the site per delay when that is tighter than ATTEST_HOST_RATE",
        ),
        Limit(
            "Unpaid requests of one caller IP being checked at once (host, robots.txt)",
            str(settings.ATTEST_UNPAID_IN_FLIGHT),
            "429 rate_limited (details.reason unpaid_in_flight) with Retry-After "
            f"{UNPAID_CHECKS_RETRY_AFTER} s, not charged",
            "ATTEST_UNPAID_IN_FLIGHT",
        ),
    ]


def _pdf() -> list[Limit]:
    return [
        Limit("Pages read", f"{MAX_PAGES:,}", "the rest is left out; pdf.truncated"),
        Limit("Characters read", f"{MAX_CHARS:,}", "the rest is left out; pdf.truncated"),
        Limit(
            "One page's content stream",
            bytes_text(MAX_CONTENT_STREAM_BYTES),
            "that page is skipped (signal pdf_pages_skipped)",
        ),
        Limit(
            "One decompressed stream",
            bytes_text(MAX_DECODED_STREAM_BYTES),
            "its page is skipped, or the PDF is unsupported (pdf_unreadable)",
        ),
        Limit(
            "Reading time, waiting for a reader included",
            seconds_text(PDF_SECONDS),
            "content_kind timeout (pdf_read_timeout): a charged result",
        ),
        Limit(
            "Memory of each of the reader processes",
            f"{bytes_text(PDF_WORKER_MEMORY)}, {PDF_WORKERS} processes",
            "content_kind unsupported (pdf_unreadable): a charged result",
        ),
        Limit(
            "Edge mode",
            "on" if settings.ATTEST_EDGE else "off",
            f"when on, any PDF: {refused_text(NotOnEdge)}",
            "ATTEST_EDGE",
        ),
    ]


def _matching() -> list[Limit]:
    return [
        Limit(
            "Fuzzy work per call (quote length times page length)",
            f"{FUZZY_WORK_PER_CALL:,} units",
            refused_text(MatchTooCostlyError),
        ),
        Limit(
            "Alignment cells for a quote of over 255 distinct characters",
            f"{MAX_WIDE_ALPHABET_CELLS:,}",
            refused_text(MatchTooCostlyError),
        ),
        Limit(
            "Passages per claim",
            f"{MAX_PASSAGES}, each text cut at {TEXT_CAP} characters, "
            f"at most {MAX_MISSING} missing words",
            "the best ones are kept",
        ),
    ]


def _crossref() -> list[Limit]:
    return [
        Limit(
            "Lookups for paid calls, across all callers",
            f"{BUDGETS['paid']} a minute",
            "crossref.status skipped (reason rate_limited); the call is charged as usual",
        ),
        Limit(
            "Lookups for free trial calls, a budget of their own",
            f"{BUDGETS['trial']} a minute",
            "crossref.status skipped (reason rate_limited); the trial call counts as usual",
        ),
        Limit(
            "One Crossref request",
            seconds_text(settings.ATTEST_CROSSREF_TIMEOUT),
            "crossref.status skipped (reason timeout)",
            "ATTEST_CROSSREF_TIMEOUT",
        ),
        Limit(
            "All lookups of one round of a call, waiting for the one turn included",
            seconds_text(LOOKUPS_DEADLINE_SECONDS),
            "crossref.status skipped (reason busy)",
        ),
        Limit(
            "Answers kept (not_found included)",
            f"{CACHE_FOR.days} day",
            "asked again after it; skipped lookups are not kept",
        ),
        Limit(
            "DOI lookups",
            "on" if settings.ATTEST_CROSSREF_URL else "off",
            "when off, no crossref block and no summary.retracted or doi_unchecked",
            "ATTEST_CROSSREF_URL",
        ),
    ]


def _batches() -> list[Limit]:
    over = refused_text(InvalidRequest) + " naming the list, as for an empty one"
    return [
        Limit(
            "Citations in one verify/citations call",
            f"1 to {MAX_CITATIONS}",
            over,
        ),
        Limit(
            "Quotes in one verify/quotes call",
            f"1 to {MAX_QUOTES}",
            over,
        ),
        Limit(
            "Fuzzy work shared by one batch's quotes",
            f"{BATCH_FUZZY_WORK:,} units",
            "the quotes past it carry error match_too_costly; all of them: "
            + refused_text(MatchTooCostlyError),
        ),
        Limit(
            "Uncharged failed batches, and paid calls refused after payment, per caller IP",
            f"{UNCHARGED_FAILURES.size}, one back every {UNCHARGED_FAILURES.refill_seconds:g} s",
            "429 rate_limited (details.reason uncharged_failures), not charged; a paid batch "
            "refused after its payment was verified keeps its place, and a paid verify/quote "
            "or fetch call refused so uses one (a running batch holds one; a running single "
            "call holds none)",
        ),
        Limit(
            "Batches matched at once, and waiting",
            f"{settings.ATTEST_MATCH_SLOTS}, and {settings.ATTEST_MATCH_QUEUE} waiting",
            "503 over_capacity (details.reason match_queue_full), not charged",
            "ATTEST_MATCH_SLOTS, ATTEST_MATCH_QUEUE",
        ),
        Limit(
            "PDFs read at once, and places waiting behind them; a request holds at "
            "most one place per reader and reads its PDFs in turn, so a batch of any "
            "size fits an idle server",
            f"{settings.ATTEST_PDF_READERS}, and {settings.ATTEST_PDF_QUEUE} waiting",
            "503 over_capacity (details.reason pdf_queue_full) with Retry-After, only "
            "while other requests hold every place or the first turn takes over "
            f"{PDF_SECONDS} s; not charged",
            "ATTEST_PDF_READERS, ATTEST_PDF_QUEUE",
        ),
    ]


register_limits("Requests", _requests)
register_limits("Fetching a page", _fetching)
register_limits("PDF", _pdf)
register_limits("Matching", _matching)
register_limits("Crossref lookups (pages with a DOI)", _crossref)
register_limits("Batches", _batches)
