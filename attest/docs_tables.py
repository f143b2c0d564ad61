"""Tables the docs pages show, each read from the code that enforces it.

Errors (with whether each is charged, from the charging table), limits (from the constants
and the running settings), prices (for the priced routes this service serves, converted by
the x402 SDK) and the meaning of each signed claim.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from django.conf import settings
from django.urls import Resolver404, resolve
from x402.mechanisms.evm.exact import ExactEvmServerScheme

from attest.errors import Blocked, InvalidRequest, NotOnEdge, OverCapacity, RateLimited
from billing.charging import CHARGING_RULES, response_is_charged
from billing.core.payment_header import MAX_PAYMENT_HEADER_CHARS
from billing.exceptions import FacilitatorUnavailable, PaymentRequiredError, SettlementPending
from billing.pricing import MAX_TIMEOUT_SECONDS, PRICED_ROUTES
from citations.auth import ProjectSuspended
from citations.extract.intervals import STATUSES
from citations.rebuilds import RebuildAlreadyRunning
from citations.selectors import (
    PAGE_BYTES,
    RESOLVE_MAX_LIMIT,
    EvidenceMismatch,
    InvalidCitation,
)
from citations.selectors import (
    CitationLimit as EvidenceTooLarge,
)
from citations.serializers import MAX_MESSAGE_BYTES, MAX_MESSAGES, RecallIn
from citations.services import MessageConflict
from citations.services.corrections import AlreadyRetracted, FactNotBelieved
from citations.web_evidence import REASONS as WEB_EVIDENCE_REASONS
from receipts.core.jws import MAX_RECEIPT_CHARS
from verification.addresses import MAX_URL_LENGTH
from verification.batches import BATCH_FUZZY_WORK, MAX_CITATIONS, MAX_QUOTES, BatchTooLarge
from verification.capacity import UNCHARGED_FAILURES
from verification.crossref import CACHE_FOR, LOOKUPS_DEADLINE_SECONDS
from verification.engine.match import FUZZY_WORK_PER_CALL, MAX_WIDE_ALPHABET_CELLS
from verification.engine.pace import BUDGETS
from verification.engine.passages import MAX_MISSING, MAX_PASSAGES, TEXT_CAP
from verification.engine.pdf_text import (
    MAX_CHARS,
    MAX_CONTENT_STREAM_BYTES,
    MAX_DECODED_STREAM_BYTES,
    MAX_PAGES,
)
from verification.fetch import MAX_REDIRECTS, DnsUnavailable, HostNotFound
from verification.pdf_pool import PDF_SECONDS, PDF_WORKERS
from verification.pdf_worker import PDF_WORKER_MEMORY
from verification.pipeline import MAX_QUOTE_CHARS, MatchTooCostlyError
from verification.robots import MAX_ROBOTS_BYTES, RobotsDisallowed
from verification.serializers import MAX_RAW_QUOTE_CHARS, VerifyQuoteInput


@dataclass(frozen=True)
class ErrorDoc:
    """One error a route can answer, as a docs page lists it."""

    status: int
    code: str
    when: str

    @property
    def charged(self) -> bool:
        rule = next((rule for rule in CHARGING_RULES if rule.code == self.code), None)
        if rule is not None:
            return rule.charged
        return response_is_charged(status=self.status, charged=None)


def _raised(error: type, when: str) -> ErrorDoc:
    return ErrorDoc(error.status_code, error.code, when)


# Answered by the one error handler for any JSON route (attest.errors).
BODY_ERRORS = (
    ErrorDoc(400, "invalid_json", "The body is not valid JSON."),
    ErrorDoc(413, "request_too_large", "The body is larger than the request size limit."),
    ErrorDoc(415, "unsupported_media_type", "The body is not sent as application/json."),
)
PAYMENT_ERRORS = (
    _raised(
        PaymentRequiredError,
        "No trial call is left and no payment was sent, or the payment was refused; "
        "details.reason says which, details.accepts holds the offer.",
    ),
    _raised(FacilitatorUnavailable, "The payment facilitator cannot be reached; retry later."),
    _raised(
        SettlementPending,
        "The payment was sent for settlement but not confirmed: retry the same request with "
        "the same payment, never pay again.",
    ),
)
_INTERNAL = ErrorDoc(
    500, "internal_error", "The server failed; quote the X-Request-ID when reporting."
)
# Answered on every route when the database or the shared cache does not answer.
UNAVAILABLE = ErrorDoc(
    503, "unavailable", "The database or the shared cache did not answer; retry after Retry-After."
)
# The limit on free work per caller IP (ATTEST_UNPAID_RATE): checks before an offer, samples,
# receipt checks. A request carrying a payment never counts.
UNPAID_LIMIT = ErrorDoc(
    429,
    "rate_limited",
    "Too many unpaid requests from this caller IP (details.reason unpaid_requests); retry "
    "after Retry-After.",
)
_PDF_QUEUE = _raised(
    OverCapacity,
    "The page is a PDF and the shared PDF queue is full (details.reason pdf_queue_full); "
    "retry after Retry-After.",
)
_DNS = _raised(DnsUnavailable, "Our resolver failed or timed out (not a missing name); retry.")
_QUEUES = _raised(
    OverCapacity,
    "The shared match or PDF queue is full (details.reason match_queue_full or "
    "pdf_queue_full); retry after Retry-After.",
)
VERIFY_QUOTE_ERRORS = (
    _raised(
        InvalidRequest,
        "A field is missing, of the wrong type or out of range; details.field names it.",
    ),
    *BODY_ERRORS,
    _raised(Blocked, "The host has an address that is not public, directly or after a redirect."),
    _raised(RobotsDisallowed, "robots.txt does not let AttestBot read the page."),
    _raised(HostNotFound, "The URL's host name does not resolve."),
    _raised(
        MatchTooCostlyError,
        "Fuzzy matching this quote on this page needs more work than one call may use.",
    ),
    UNPAID_LIMIT,
    _PDF_QUEUE,
    _raised(NotOnEdge, "The page is a PDF and this server runs in edge mode."),
    _DNS,
    UNAVAILABLE,
    *PAYMENT_ERRORS,
    _INTERNAL,
)
BATCH_ERRORS = (
    _raised(
        InvalidRequest,
        "A field is missing, of the wrong type or out of range; details.field names the member, "
        "such as citations[2].quote. An empty list is refused too.",
    ),
    *BODY_ERRORS,
    _raised(
        Blocked,
        "A URL (the first one in request order) or a redirect leads to an address that is not "
        "public; details.field names it. The whole batch is refused.",
    ),
    _raised(RobotsDisallowed, "robots.txt does not let AttestBot read a URL or a redirect."),
    _raised(
        BatchTooLarge,
        "More members than the route allows (details.field names the list, with its limit "
        "and count); split the batch.",
    ),
    _raised(HostNotFound, "No URL of the batch has a host name that resolves."),
    _raised(
        MatchTooCostlyError,
        "Every quote was over its fuzzy work limit or reached after the batch's share was "
        "spent; details.failed lists them.",
    ),
    _raised(
        RateLimited,
        "The caller's bucket of uncharged failed batches is empty (details.reason "
        "uncharged_failures), or too many unpaid requests (unpaid_requests); retry after "
        "Retry-After.",
    ),
    _QUEUES,
    _raised(NotOnEdge, "A page is a PDF and this server runs in edge mode."),
    _DNS,
    UNAVAILABLE,
    *PAYMENT_ERRORS,
    _INTERNAL,
)
FETCH_ERRORS = (
    _raised(InvalidRequest, "url is missing, not http(s), too long or carries a password."),
    *BODY_ERRORS,
    _raised(Blocked, "The host has an address that is not public, directly or after a redirect."),
    _raised(RobotsDisallowed, "robots.txt does not let AttestBot read the page."),
    _raised(HostNotFound, "The URL's host name does not resolve."),
    UNPAID_LIMIT,
    _PDF_QUEUE,
    _raised(NotOnEdge, "The page is a PDF and this server runs in edge mode."),
    _DNS,
    UNAVAILABLE,
    *PAYMENT_ERRORS,
    _INTERNAL,
)
# Every ledger route checks the credential first (citations.auth, citations.views).
LEDGER_AUTH_ERRORS = (
    ErrorDoc(401, "unauthenticated", "No credential, or an unknown or revoked one."),
    _raised(ProjectSuspended, "The credential's project is suspended."),
    ErrorDoc(
        429,
        "rate_limited",
        "This credential has used its request budget; retry after Retry-After.",
    ),
)
INGEST_ERRORS = (
    _raised(
        InvalidRequest,
        "A field is missing or wrong: no messages, too many, a message too large, an unknown "
        "role, a time without its offset; details.field names it (messages[1].occurred_at).",
    ),
    *BODY_ERRORS,
    *LEDGER_AUTH_ERRORS,
    ErrorDoc(404, "not_found", "The subject was erased: it takes no new messages."),
    _raised(
        MessageConflict,
        "The message ID was stored before with other text, role, time or subject.",
    ),
    UNAVAILABLE,
    _INTERNAL,
)
RECALL_ERRORS = (
    _raised(
        InvalidRequest,
        "subject is missing, limit is out of range, or a time in as_of has no offset; "
        "details.field names it.",
    ),
    *BODY_ERRORS,
    *LEDGER_AUTH_ERRORS,
    UNAVAILABLE,
    _INTERNAL,
)
RESOLVE_ERRORS = (
    _raised(
        InvalidCitation,
        "The ID is not a UUID, limit is not an integer in range, or after is not a cursor this "
        "service issued for this ID.",
    ),
    *BODY_ERRORS,
    *LEDGER_AUTH_ERRORS,
    ErrorDoc(404, "not_found", "Unknown, erased, or another project's ID: all three alike."),
    _raised(EvidenceTooLarge, "One source alone is larger than the page limit."),
    _raised(
        EvidenceMismatch,
        "The stored bytes no longer match the evidence, or a web quote's stored receipt no "
        "longer checks or no longer signs its quote; no evidence is returned.",
    ),
    UNAVAILABLE,
)
RECEIPT_VERIFY_ERRORS = (
    _raised(
        InvalidRequest, "receipt is missing or not a string, or page is not a non-negative integer."
    ),
    *BODY_ERRORS,
    UNPAID_LIMIT,
    UNAVAILABLE,
    _INTERNAL,
)


@dataclass(frozen=True)
class Limit:
    what: str
    value: str
    over: str  # what happens past it
    setting: str = ""  # the environment variable that changes it, if any


def _bytes(count: int) -> str:
    for unit, size in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if count >= size and count % (size // 4) == 0:
            return f"{count / size:g} {unit} ({count:,} bytes)"
    return f"{count:,} bytes"


def _seconds(value: float) -> str:
    return f"{value:g} s"


def _error(error: type) -> str:
    return f"{error.status_code} {error.code}, not charged"


def limits() -> list[tuple[str, list[Limit]]]:
    """Every limit the service enforces today, grouped, each figure read from the code."""
    threshold = VerifyQuoteInput().fields["threshold"]
    recall_limit = RecallIn().fields["limit"]
    return [
        (
            "Requests",
            [
                Limit(
                    "Request body",
                    _bytes(settings.DATA_UPLOAD_MAX_MEMORY_SIZE),
                    "413 request_too_large, not charged",
                    "ATTEST_MAX_BODY_BYTES",
                ),
                Limit("URL length", f"{MAX_URL_LENGTH:,} characters", _error(InvalidRequest)),
                Limit(
                    "Quote or claim, after normalisation",
                    f"{MAX_QUOTE_CHARS:,} characters",
                    _error(InvalidRequest),
                ),
                Limit(
                    "Quote or claim as sent (refused unread)",
                    f"{MAX_RAW_QUOTE_CHARS:,} characters",
                    _error(InvalidRequest),
                ),
                Limit(
                    "Fuzzy threshold",
                    f"{threshold.min_value:g} to {threshold.max_value:g}",
                    _error(InvalidRequest),
                ),
            ],
        ),
        (
            "Fetching a page",
            [
                Limit(
                    "Whole fetch (every redirect hop and body read)",
                    _seconds(settings.ATTEST_FETCH_DEADLINE),
                    "content_kind timeout: a charged result",
                    "ATTEST_FETCH_DEADLINE",
                ),
                Limit(
                    "Decoded page body",
                    _bytes(settings.ATTEST_FETCH_MAX_BYTES),
                    "content_kind too_large: a charged result, nothing matched",
                    "ATTEST_FETCH_MAX_BYTES",
                ),
                Limit(
                    "Redirects followed",
                    str(MAX_REDIRECTS),
                    "content_kind http_error (too_many_redirects): a charged result",
                ),
                Limit("robots.txt read", _bytes(MAX_ROBOTS_BYTES), "the rest is not parsed"),
            ],
        ),
        (
            "PDF",
            [
                Limit("Pages read", f"{MAX_PAGES:,}", "the rest is left out; pdf.truncated"),
                Limit("Characters read", f"{MAX_CHARS:,}", "the rest is left out; pdf.truncated"),
                Limit(
                    "One page's content stream",
                    _bytes(MAX_CONTENT_STREAM_BYTES),
                    "that page is skipped (signal pdf_pages_skipped)",
                ),
                Limit(
                    "One decompressed stream",
                    _bytes(MAX_DECODED_STREAM_BYTES),
                    "its page is skipped, or the PDF is unsupported (pdf_unreadable)",
                ),
                Limit(
                    "Reading time, waiting for a reader included",
                    _seconds(PDF_SECONDS),
                    "content_kind timeout (pdf_read_timeout): a charged result",
                ),
                Limit(
                    "Memory of each of the reader processes",
                    f"{_bytes(PDF_WORKER_MEMORY)}, {PDF_WORKERS} processes",
                    "content_kind unsupported (pdf_unreadable): a charged result",
                ),
                Limit(
                    "Edge mode",
                    "on" if settings.ATTEST_EDGE else "off",
                    f"when on, any PDF: {_error(NotOnEdge)}",
                    "ATTEST_EDGE",
                ),
            ],
        ),
        (
            "Matching",
            [
                Limit(
                    "Fuzzy work per call (quote length times page length)",
                    f"{FUZZY_WORK_PER_CALL:,} units",
                    _error(MatchTooCostlyError),
                ),
                Limit(
                    "Alignment cells for a quote of over 255 distinct characters",
                    f"{MAX_WIDE_ALPHABET_CELLS:,}",
                    _error(MatchTooCostlyError),
                ),
                Limit(
                    "Passages per claim",
                    f"{MAX_PASSAGES}, each text cut at {TEXT_CAP} characters, "
                    f"at most {MAX_MISSING} missing words",
                    "the best ones are kept",
                ),
            ],
        ),
        (
            "Crossref lookups (pages with a DOI)",
            [
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
                    _seconds(settings.ATTEST_CROSSREF_TIMEOUT),
                    "crossref.status skipped (reason timeout)",
                    "ATTEST_CROSSREF_TIMEOUT",
                ),
                Limit(
                    "All lookups of one round of a call, waiting for the one turn included",
                    _seconds(LOOKUPS_DEADLINE_SECONDS),
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
            ],
        ),
        (
            "Payments and receipts",
            [
                Limit(
                    "Free trial calls per caller IP per UTC day",
                    f"{settings.ATTEST_TRIAL_CALLS_PER_DAY:,}",
                    "402 payment_required (details.reason trial_exhausted), not charged",
                    "ATTEST_TRIAL_CALLS_PER_DAY",
                ),
                Limit(
                    "Payment header",
                    f"{MAX_PAYMENT_HEADER_CHARS:,} characters",
                    "402 payment_required (details.reason malformed_payment)",
                ),
                Limit("Offer validity (maxTimeoutSeconds)", _seconds(MAX_TIMEOUT_SECONDS), "—"),
                Limit(
                    "Receipt size checked",
                    f"{MAX_RECEIPT_CHARS:,} characters",
                    "valid false, reason too_large",
                ),
            ],
        ),
        (
            "Batches",
            [
                Limit(
                    "Citations in one verify/citations call",
                    f"1 to {MAX_CITATIONS}",
                    _error(InvalidRequest) + " naming the list, as for an empty one",
                ),
                Limit(
                    "Quotes in one verify/quotes call",
                    f"1 to {MAX_QUOTES}",
                    _error(InvalidRequest) + " naming the list, as for an empty one",
                ),
                Limit(
                    "Fuzzy work shared by one batch's quotes",
                    f"{BATCH_FUZZY_WORK:,} units",
                    "the quotes past it carry error match_too_costly; all of them: "
                    + _error(MatchTooCostlyError),
                ),
                Limit(
                    "Uncharged failed batches per caller IP",
                    f"{UNCHARGED_FAILURES.size}, one back every "
                    f"{UNCHARGED_FAILURES.refill_seconds:g} s",
                    "429 rate_limited (details.reason uncharged_failures), not charged",
                ),
                Limit(
                    "Batches matched at once, and waiting",
                    f"{settings.ATTEST_MATCH_SLOTS}, and {settings.ATTEST_MATCH_QUEUE} waiting",
                    "503 over_capacity (details.reason match_queue_full), not charged",
                    "ATTEST_MATCH_SLOTS, ATTEST_MATCH_QUEUE",
                ),
                Limit(
                    "PDFs read at once, and waiting",
                    f"{settings.ATTEST_PDF_READERS}, and {settings.ATTEST_PDF_QUEUE} waiting",
                    "503 over_capacity (details.reason pdf_queue_full), not charged",
                    "ATTEST_PDF_READERS, ATTEST_PDF_QUEUE",
                ),
            ],
        ),
        (
            "Fact ledger",
            [
                Limit(
                    "Messages in one ingest request",
                    f"1 to {MAX_MESSAGES}",
                    _error(InvalidRequest),
                ),
                Limit("One message's text", _bytes(MAX_MESSAGE_BYTES), _error(InvalidRequest)),
                Limit(
                    "Facts one recall returns (limit)",
                    f"{recall_limit.min_value} to {recall_limit.max_value}, "
                    f"default {recall_limit.default}",
                    _error(InvalidRequest),
                ),
                Limit(
                    "Evidence rows in one resolve page",
                    f"1 to {RESOLVE_MAX_LIMIT}",
                    "400 invalid_citation",
                ),
                Limit(
                    "Quote and context text in one resolve page",
                    _bytes(PAGE_BYTES),
                    "the page stops early and next says where to go on; one source alone "
                    "over it: 422 citation_limit",
                ),
                Limit(
                    "Requests per credential",
                    _rate(settings.ATTEST_LEDGER_RATE),
                    "429 rate_limited with Retry-After, nothing stored",
                    "ATTEST_LEDGER_RATE",
                ),
            ],
        ),
    ]


_RATE_UNITS = {"s": "second", "m": "minute", "h": "hour", "d": "day"}


def _rate(rate: str) -> str:
    """django-ratelimit's "1200/m" (or "10/5m") as words."""
    count, _, period = rate.partition("/")
    amount, unit = period[:-1], _RATE_UNITS[period[-1]]
    per = f"{amount} {unit}s" if amount and amount != "1" else unit
    return f"{int(count):,} per {per}"


@dataclass(frozen=True)
class Price:
    route: str
    path: str
    price: str
    amount: str
    description: str

    @property
    def dollars(self) -> str:
        return f"US{self.price}"


def served(path_: str) -> bool:
    try:
        resolve(path_)
    except Resolver404:
        return False
    return True


def prices() -> list[Price]:
    """The priced routes this service serves, with the atomic amount the x402 SDK offers."""
    scheme = ExactEvmServerScheme()
    rows = []
    for route in PRICED_ROUTES.values():
        route_path = f"/v1/{route.name}"
        if served(route_path):
            amount = scheme.parse_price(route.price, settings.X402_NETWORK).amount
            rows.append(Price(route.name, route_path, route.price, amount, route.description))
    return rows


def price_of(name: str) -> Price | None:
    return next((row for row in prices() if row.route == name), None)


CLAIMS_DOC = {
    "url": "the URL asked for",
    "final_url": "the URL the page came from, after redirects",
    "http_status": "the page's HTTP status",
    "content_kind": "the verdict on the page (real, bot_wall, ...)",
    "content_sha256": "SHA-256 of the bytes received",
    "normalised_sha256": "SHA-256 of the normalised text the offsets point into",
    "evidence": "network facts: address, redirects, content type, bytes",
    "doi": "the DOI found on the page",
    "doi_status": "the crossref block's status: found, not_found, skipped; null without a lookup",
    "retracted": "true when Crossref lists a retraction, withdrawal or removal; null if unknown",
    "page": "index of the result's page in pages",
    "quote_sha256": "SHA-256 of the quote exactly as sent; never the quote itself",
    "mode": "fuzzy, exact or passages",
    "match": "the verdict",
    "score": "the similarity or passage score",
    "start": "code-point offset into the normalised text",
    "end": "end of the span (exclusive)",
    "pdf_page": "1-based PDF page where the span starts",
    "pdf_page_end": "1-based PDF page where it ends",
    "scorer": "the passages scorer",
    "passages": "each passage's start, end, score and PDF pages",
}


def claim_rows(cls: type) -> list[tuple[str, str]]:
    return [(f.name, CLAIMS_DOC[f.name]) for f in dataclasses.fields(cls)]


# --- the fact ledger's routes (per-project credential, never charged) ---------------------


def _ledger_errors() -> dict[str, tuple[ErrorDoc, ...]]:
    invalid = _raised(
        InvalidRequest,
        "A field is missing, of the wrong JSON type or out of range; details.field names it.",
    )
    not_found = ErrorDoc(
        404, "not_found", "The ID is unknown, erased or another project's: all three alike."
    )
    return {
        "retract": (
            invalid,
            *BODY_ERRORS,
            *LEDGER_AUTH_ERRORS,
            not_found,
            _raised(
                AlreadyRetracted, "The fact was retracted before; the first retraction stands."
            ),
            _raised(FactNotBelieved, "A rebuild or a merge closed the fact already."),
            UNAVAILABLE,
            _INTERNAL,
        ),
        "authored": (
            invalid,
            ErrorDoc(
                400,
                "invalid_request",
                "A piece of web evidence was refused: details.field names it (evidence[0].quote) "
                "and details.reason says why: "
                + ", ".join(WEB_EVIDENCE_REASONS)
                + ". Nothing is written.",
            ),
            *BODY_ERRORS,
            *LEDGER_AUTH_ERRORS,
            ErrorDoc(404, "not_found", "The subject was erased: it takes no new facts."),
            UNAVAILABLE,
            _INTERNAL,
        ),
        "rebuild": (
            invalid,
            *BODY_ERRORS,
            *LEDGER_AUTH_ERRORS,
            ErrorDoc(404, "not_found", "The subject, message or rebuild is unknown or erased."),
            _raised(RebuildAlreadyRunning, "A project rebuild is already running; follow it."),
            UNAVAILABLE,
            _INTERNAL,
        ),
        "erasure": (
            invalid,
            *BODY_ERRORS,
            *LEDGER_AUTH_ERRORS,
            ErrorDoc(
                404,
                "not_found",
                "The subject or message is unknown, erased already, "
                "or another project's: all alike.",
            ),
            UNAVAILABLE,
            _INTERNAL,
        ),
        "export": (
            *LEDGER_AUTH_ERRORS,
            ErrorDoc(404, "not_found", "The subject is unknown, erased, or another project's."),
            UNAVAILABLE,
            _INTERNAL,
        ),
        "inventory": (
            _raised(
                InvalidRequest,
                "A parameter is unknown, repeated or out of range, or after is not a cursor "
                "of this query; details.field names it.",
            ),
            *LEDGER_AUTH_ERRORS,
            UNAVAILABLE,
            _INTERNAL,
        ),
    }


def ledger_errors(route: str) -> tuple[ErrorDoc, ...]:
    return _ledger_errors()[route]


FACT_STATUS_MEANING = {
    "current": "believed now and true with no end",
    "validity_closed": "believed, but true only until a date (for instance superseded by a "
    "newer value: superseded_by names it)",
    "knowledge_closed": "no longer believed: this version was replaced by a later one",
    "retracted": "withdrawn: retraction says by whom, when and why",
    "reinterpreted": "replaced by a rebuild: reinterpreted_by names the generation",
}


def fact_statuses() -> list[tuple[str, str]]:
    """Every status a fact version can have (citations.extract.intervals), with its meaning."""
    return [(status, FACT_STATUS_MEANING[status]) for status in STATUSES]
