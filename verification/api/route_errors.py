"""What each verification route can answer besides its 200, registered once: the route's
schema (``attest.schema.route_error_responses`` in its view), its docs page and the docs
check all read this list."""

from __future__ import annotations

from attest.errors import Blocked, InvalidRequest, NotOnEdge, OverCapacity, RateLimited
from attest.registry import BODY_ERRORS, INTERNAL, UNAVAILABLE, raised, register_errors
from billing.route_errors import PAYMENT_ERRORS, UNPAID_LIMIT
from verification.network.fetch import DnsUnavailable, HostNotFound
from verification.network.politeness import HostRateLimited
from verification.network.robots import RobotsDisallowed
from verification.pipeline.batches import BatchTooLarge
from verification.pipeline.steps import MatchTooCostlyError

VERIFY_QUOTE = "POST /v1/verify/quote"
VERIFY_QUOTES = "POST /v1/verify/quotes"
VERIFY_CITATIONS = "POST /v1/verify/citations"
FETCH = "POST /v1/fetch"

_PDF_QUEUE = raised(
    OverCapacity,
    "The page is a PDF and the shared PDF queue is full (details.reason pdf_queue_full); "
    "retry after Retry-After.",
)
_DNS = raised(DnsUnavailable, "Our resolver failed or timed out (not a missing name); retry.")
_HOST_RATE = raised(
    HostRateLimited,
    "The site's fetch budget (ATTEST_HOST_RATE, or its robots.txt Crawl-delay) is spent "
    "(details.reason host_rate_limited, details.host names it), before payment or, for a "
    "redirect, after it; or the caller's unpaid checks are all running (unpaid_in_flight); "
    "or, for a paid call, the caller's places for uncharged failures are used "
    "(uncharged_failures). Retry after Retry-After.",
)
_QUEUES = raised(
    OverCapacity,
    "The shared match or PDF queue is full (details.reason match_queue_full or "
    "pdf_queue_full); retry after Retry-After.",
)
# Why a page's URL is refused before it is fetched: verify/quote and fetch alike.
_URL_ERRORS = (
    raised(
        Blocked,
        "The host has an address that is not public, directly or after a redirect, or a "
        "redirect leads to a URL that is not http or https (details.reason "
        "redirect_not_followed, details.scheme names it).",
    ),
    raised(RobotsDisallowed, "robots.txt does not let AttestBot read the page."),
    raised(HostNotFound, "The URL's host name does not resolve."),
)
# What a one-page call (verify/quote, fetch) can answer once its URL is past the checks.
_ONE_PAGE_TAIL = (
    UNPAID_LIMIT,
    _HOST_RATE,
    _PDF_QUEUE,
    raised(NotOnEdge, "The page is a PDF and this server runs in edge mode."),
    UNAVAILABLE,
    *PAYMENT_ERRORS,
    _DNS,
    INTERNAL,
)

VERIFY_QUOTE_ERRORS = (
    raised(
        InvalidRequest,
        "A field is missing, of the wrong type or out of range; details.field names it.",
    ),
    *BODY_ERRORS,
    *_URL_ERRORS,
    raised(
        MatchTooCostlyError,
        "Fuzzy matching this quote on this page needs more work than one call may use.",
    ),
    *_ONE_PAGE_TAIL,
)
BATCH_ERRORS = (
    raised(
        InvalidRequest,
        "A field is missing, of the wrong type or out of range; details.field names the member, "
        "such as citations[2].quote. An empty list is refused too.",
    ),
    *BODY_ERRORS,
    raised(
        Blocked,
        "A URL (the first one in request order) or a redirect leads to an address that is not "
        "public, or a redirect to a URL that is not http or https (details.reason "
        "redirect_not_followed); details.field names it. The whole batch is refused.",
    ),
    raised(RobotsDisallowed, "robots.txt does not let AttestBot read a URL or a redirect."),
    raised(
        BatchTooLarge,
        "More members than the route allows (details.field names the list, with its limit "
        "and count); split the batch.",
    ),
    raised(HostNotFound, "No URL of the batch has a host name that resolves."),
    raised(
        MatchTooCostlyError,
        "Every quote was over its fuzzy work limit or reached after the batch's share was "
        "spent; details.failed lists them.",
    ),
    raised(
        RateLimited,
        "The caller's bucket of uncharged failed batches is empty (details.reason "
        "uncharged_failures), too many unpaid requests (unpaid_requests) or unpaid checks "
        "running (unpaid_in_flight), or a site's fetch budget is spent (host_rate_limited, "
        "details.host; after payment for a redirect, failing the whole batch); retry after "
        "Retry-After.",
    ),
    _QUEUES,
    raised(NotOnEdge, "A page is a PDF and this server runs in edge mode."),
    UNAVAILABLE,
    *PAYMENT_ERRORS,
    _DNS,
    INTERNAL,
)
FETCH_ERRORS = (
    raised(InvalidRequest, "url is missing, not http(s), too long or carries a password."),
    *BODY_ERRORS,
    *_URL_ERRORS,
    *_ONE_PAGE_TAIL,
)

register_errors(VERIFY_QUOTE, VERIFY_QUOTE_ERRORS)
register_errors(VERIFY_QUOTES, BATCH_ERRORS)
register_errors(VERIFY_CITATIONS, BATCH_ERRORS)
register_errors(FETCH, FETCH_ERRORS)

SAMPLE_QUOTE = "GET /v1/sample/quote"
SAMPLE_QUOTE_ERRORS = (
    raised(
        InvalidRequest,
        "match is not fuzzy, exact or passages, page is not demo or missing, a parameter is "
        "unknown, or a value is not UTF-8; details.field names the parameter.",
    ),
    UNPAID_LIMIT,
    UNAVAILABLE,
    INTERNAL,
)
register_errors(SAMPLE_QUOTE, SAMPLE_QUOTE_ERRORS)
