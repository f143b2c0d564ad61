"""What each fact-ledger route can answer besides its success, registered once: the
route's schema (``attest.schema.route_error_responses`` in its view), its docs page and the
docs check all read this list."""

from __future__ import annotations

from attest.errors import InvalidRequest
from attest.registry import BODY_ERRORS, INTERNAL, UNAVAILABLE, ErrorDoc, raised, register_errors
from billing.exceptions import (
    FacilitatorUnavailable,
    PaymentIdentifierConflict,
    PaymentRequiredError,
    SettlementPending,
)
from billing.owners import InvalidCredential
from billing.route_errors import UNPAID_LIMIT
from citations.auth import ProjectSuspended
from citations.selectors import RESOLVE_MAX_LIMIT, EvidenceMismatch, InvalidCitation
from citations.selectors import CitationLimit as EvidenceTooLarge
from citations.selectors.web_evidence import REASONS as WEB_EVIDENCE_REASONS
from citations.services import MessageConflict
from citations.services.corrections import AlreadyRetracted, FactNotBelieved
from citations.services.predicates import NAME_PATTERN, PredicateConflict
from citations.services.rebuilds import RebuildAlreadyRunning

OBSERVATIONS = "POST /v1/observations"
RECALL = "POST /v1/recall"
RESOLVE = "POST /v1/citations/resolve"
FACT_RETRACT = "POST /v1/facts/{fact_id}/retract"
FACTS_CREATE = "POST /v1/facts"
REBUILDS = "POST /v1/rebuilds"
ERASURES = "POST /v1/erasures"
SUBJECT_EXPORT = "GET /v1/subjects/{subject}/export"
FACTS_LIST = "GET /v1/facts"
PREDICATES_DECLARE = "POST /v1/predicates"
PREDICATES_LIST = "GET /v1/predicates"
REBUILD_GET = "GET /v1/rebuilds/{generation_id}"
CHANGES = "POST /v1/changes"
SUBJECTS_LIST = "GET /v1/subjects"

# Every ledger route checks the credential first (citations.auth, citations.api.views).
LEDGER_AUTH_ERRORS = (
    ErrorDoc(401, "unauthenticated", "No credential, or an unknown or revoked one."),
    raised(ProjectSuspended, "The credential's project is suspended."),
    ErrorDoc(
        429,
        "rate_limited",
        "This credential has used its request budget; retry after Retry-After.",
    ),
)
_INVALID = raised(
    InvalidRequest,
    "A field is missing, of the wrong JSON type or out of range; details.field names it.",
)
_NOT_FOUND = ErrorDoc(
    404, "not_found", "The ID is unknown, erased or another project's: all three alike."
)

register_errors(
    OBSERVATIONS,
    (
        raised(
            InvalidRequest,
            "A field is missing or wrong: no messages, too many, a message too large, an "
            "unknown role, a time without its offset; details.field names it "
            "(messages[1].occurred_at).",
        ),
        *BODY_ERRORS,
        *LEDGER_AUTH_ERRORS,
        ErrorDoc(404, "not_found", "The subject was erased: it takes no new messages."),
        raised(
            MessageConflict,
            "The message ID was stored before with other text, role, time or subject.",
        ),
        UNAVAILABLE,
        INTERNAL,
    ),
)
register_errors(
    RECALL,
    (
        raised(
            InvalidRequest,
            "subject is missing, limit is out of range (with query at most 100), a time in "
            "as_of has no offset, or after is not a cursor of this query; details.field "
            "names it.",
        ),
        *BODY_ERRORS,
        *LEDGER_AUTH_ERRORS,
        UNAVAILABLE,
        INTERNAL,
    ),
)
register_errors(
    RESOLVE,
    (
        raised(
            InvalidCitation,
            "The ID is not a UUID, limit is not an integer from 1, or after is not a cursor "
            "this service issued for this ID.",
        ),
        raised(
            InvalidRequest,
            f"limit is over {RESOLVE_MAX_LIMIT} (details.limit and details.count): a page larger "
            "than the route "
            "allows, refused like any list over its size.",
        ),
        *BODY_ERRORS,
        *LEDGER_AUTH_ERRORS,
        ErrorDoc(404, "not_found", "Unknown, erased, or another project's ID: all three alike."),
        raised(EvidenceTooLarge, "One source alone is larger than the page limit."),
        raised(
            EvidenceMismatch,
            "The stored bytes no longer match the evidence, or a web quote's stored receipt no "
            "longer checks or no longer signs its quote; no evidence is returned.",
        ),
        UNAVAILABLE,
        INTERNAL,
    ),
)
register_errors(
    FACT_RETRACT,
    (
        _INVALID,
        *BODY_ERRORS,
        *LEDGER_AUTH_ERRORS,
        _NOT_FOUND,
        raised(AlreadyRetracted, "The fact was retracted before; the first retraction stands."),
        raised(FactNotBelieved, "A rebuild or a merge closed the fact already."),
        UNAVAILABLE,
        INTERNAL,
    ),
)
register_errors(
    FACTS_CREATE,
    (
        _INVALID,
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
        INTERNAL,
    ),
)
register_errors(
    REBUILDS,
    (
        _INVALID,
        *BODY_ERRORS,
        *LEDGER_AUTH_ERRORS,
        ErrorDoc(404, "not_found", "The subject, message or rebuild is unknown or erased."),
        raised(RebuildAlreadyRunning, "A project rebuild is already running; follow it."),
        UNAVAILABLE,
        INTERNAL,
    ),
)
register_errors(
    ERASURES,
    (
        _INVALID,
        *BODY_ERRORS,
        *LEDGER_AUTH_ERRORS,
        ErrorDoc(
            404,
            "not_found",
            "The subject or message is unknown, erased already, or another project's: all alike.",
        ),
        UNAVAILABLE,
        INTERNAL,
    ),
)
register_errors(
    SUBJECT_EXPORT,
    (
        *LEDGER_AUTH_ERRORS,
        ErrorDoc(404, "not_found", "The subject is unknown, erased, or another project's."),
        UNAVAILABLE,
        INTERNAL,
    ),
)
register_errors(
    FACTS_LIST,
    (
        raised(
            InvalidRequest,
            "A parameter is unknown, repeated, out of range or not UTF-8, or after is not a "
            "cursor of this query; details.field names it.",
        ),
        *LEDGER_AUTH_ERRORS,
        UNAVAILABLE,
        INTERNAL,
    ),
)

register_errors(
    PREDICATES_DECLARE,
    (
        raised(
            InvalidRequest,
            f"name does not match {NAME_PATTERN}, cardinality is not one or many, or the "
            "description is too long; details.field names it.",
        ),
        *BODY_ERRORS,
        *LEDGER_AUTH_ERRORS,
        raised(PredicateConflict, "A built-in's name, or declared with the other cardinality."),
        UNAVAILABLE,
        INTERNAL,
    ),
)
register_errors(
    REBUILD_GET,
    (
        *LEDGER_AUTH_ERRORS,
        ErrorDoc(404, "not_found", "No rebuild with this ID in this project."),
        UNAVAILABLE,
        INTERNAL,
    ),
)
register_errors(PREDICATES_LIST, (*LEDGER_AUTH_ERRORS, UNAVAILABLE, INTERNAL))
register_errors(
    CHANGES,
    (
        raised(
            InvalidRequest,
            "A field is unknown or of the wrong type, limit is out of range, or after is not "
            "a cursor of this query; details.field names it.",
        ),
        *BODY_ERRORS,
        *LEDGER_AUTH_ERRORS,
        UNAVAILABLE,
        INTERNAL,
    ),
)
register_errors(
    SUBJECTS_LIST,
    (
        raised(
            InvalidRequest,
            "A parameter is unknown, repeated or out of range, or after is not a cursor "
            "of this query; details.field names it.",
        ),
        *LEDGER_AUTH_ERRORS,
        UNAVAILABLE,
        INTERNAL,
    ),
)

CREDITS_BUY = "POST /v1/credits"
CREDITS_READ = "GET /v1/credits"
register_errors(
    CREDITS_BUY,
    (
        raised(
            InvalidRequest,
            "amount is not a string of US dollars with at most 2 decimals from 0.10 to "
            "100.00; details.field is amount.",
        ),
        *BODY_ERRORS,
        raised(
            PaymentRequiredError,
            "Unpaid, or the payment was refused: the x402 offer for exactly this amount "
            "(details.reason payment_required, or why the payment was refused).",
        ),
        raised(InvalidCredential, "The Bearer credential is unknown, revoked or suspended."),
        raised(FacilitatorUnavailable, "The payment facilitator cannot be reached; retry later."),
        raised(
            SettlementPending,
            "The payment was sent for settlement but not confirmed: retry the same request "
            "with the same payment after Retry-After, never pay again.",
        ),
        raised(
            PaymentIdentifierConflict,
            "The payment-identifier already paid for another request; send a new one.",
        ),
        UNPAID_LIMIT,
        UNAVAILABLE,
        INTERNAL,
    ),
)
register_errors(
    CREDITS_READ,
    (
        raised(InvalidRequest, "after or limit is not a whole number in range."),
        ErrorDoc(401, "unauthenticated", "No credential, or an unknown or revoked one."),
        raised(ProjectSuspended, "The credential's project is suspended."),
        UNPAID_LIMIT,
        UNAVAILABLE,
        INTERNAL,
    ),
)
