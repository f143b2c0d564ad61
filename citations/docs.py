"""What the fact ledger registers for the docs pages: its routes' errors, limits, statuses."""

from __future__ import annotations

from typing import cast

from django.conf import settings
from rest_framework.fields import IntegerField

from attest.errors import InvalidRequest
from attest.registry import (
    BODY_ERRORS,
    INTERNAL,
    UNAVAILABLE,
    ErrorDoc,
    Limit,
    bytes_text,
    raised,
    rate_text,
    refused_text,
    register_errors,
    register_limits,
    register_table,
)
from citations.api.serializers import MAX_MESSAGE_BYTES, MAX_MESSAGES, RecallIn
from citations.auth import ProjectSuspended
from citations.extract.intervals import STATUSES
from citations.selectors import (
    PAGE_BYTES,
    RESOLVE_MAX_LIMIT,
    EvidenceMismatch,
    InvalidCitation,
)
from citations.selectors import (
    CitationLimit as EvidenceTooLarge,
)
from citations.selectors.web_evidence import REASONS as WEB_EVIDENCE_REASONS
from citations.services import MessageConflict
from citations.services.corrections import AlreadyRetracted, FactNotBelieved
from citations.services.predicates import (
    DESCRIPTION_MAX_CHARS,
    NAME_PATTERN,
    PredicateConflict,
)
from citations.services.rebuilds import RebuildAlreadyRunning

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
    "POST /v1/observations",
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
    "POST /v1/recall",
    (
        raised(
            InvalidRequest,
            "subject is missing, limit is out of range, or a time in as_of has no offset; "
            "details.field names it.",
        ),
        *BODY_ERRORS,
        *LEDGER_AUTH_ERRORS,
        UNAVAILABLE,
        INTERNAL,
    ),
)
register_errors(
    "POST /v1/citations/resolve",
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
    "POST /v1/facts/{fact_id}/retract",
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
    "POST /v1/facts",
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
    "POST /v1/rebuilds",
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
    "POST /v1/erasures",
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
    "GET /v1/subjects/{subject}/export",
    (
        *LEDGER_AUTH_ERRORS,
        ErrorDoc(404, "not_found", "The subject is unknown, erased, or another project's."),
        UNAVAILABLE,
        INTERNAL,
    ),
)
register_errors(
    "GET /v1/facts",
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

register_errors(
    "POST /v1/predicates",
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
register_errors("GET /v1/predicates", (*LEDGER_AUTH_ERRORS, UNAVAILABLE, INTERNAL))


def _ledger() -> list[Limit]:
    recall_limit = cast(IntegerField, RecallIn().fields["limit"])
    return [
        Limit(
            "Messages in one ingest request", f"1 to {MAX_MESSAGES}", refused_text(InvalidRequest)
        ),
        Limit("One message's text", bytes_text(MAX_MESSAGE_BYTES), refused_text(InvalidRequest)),
        Limit("A declared predicate's name", NAME_PATTERN, refused_text(InvalidRequest)),
        Limit(
            "A declared predicate's description",
            f"at most {DESCRIPTION_MAX_CHARS} characters",
            refused_text(InvalidRequest),
        ),
        Limit(
            "Facts one recall returns (limit)",
            f"{recall_limit.min_value} to {recall_limit.max_value}, default {recall_limit.default}",
            refused_text(InvalidRequest),
        ),
        Limit(
            "Evidence rows in one resolve page",
            f"1 to {RESOLVE_MAX_LIMIT}",
            "400 invalid_citation",
        ),
        Limit(
            "Quote and context text in one resolve page",
            bytes_text(PAGE_BYTES),
            "the page stops early and next says where to go on; one source alone "
            "over it: 422 citation_limit",
        ),
        Limit(
            "Requests per credential",
            rate_text(settings.ATTEST_LEDGER_RATE),
            "429 rate_limited with Retry-After, nothing stored",
            "ATTEST_LEDGER_RATE",
        ),
    ]


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


register_limits("Fact ledger", _ledger)
register_table("fact statuses", fact_statuses)
