"""What POST /v1/receipt/verify can answer besides its 200, registered once: its view's
schema (``attest.schema.route_error_responses``), its docs page and the docs check read it."""

from __future__ import annotations

from attest.errors import InvalidRequest
from attest.registry import BODY_ERRORS, INTERNAL, UNAVAILABLE, raised, register_errors
from billing.route_errors import UNPAID_LIMIT

RECEIPT_VERIFY = "POST /v1/receipt/verify"

RECEIPT_VERIFY_ERRORS = (
    raised(
        InvalidRequest, "receipt is missing or not a string, or page is not a non-negative integer."
    ),
    *BODY_ERRORS,
    UNPAID_LIMIT,
    UNAVAILABLE,
    INTERNAL,
)

register_errors(RECEIPT_VERIFY, RECEIPT_VERIFY_ERRORS)

LOG_HEAD = "GET /v1/log/head"
LOG_PROOF = "GET /v1/log/proof"
LOG_CONSISTENCY = "GET /v1/log/consistency"

_LOG_PARAMETER = "a parameter that is unknown, repeated, missing or not written in digits"
LOG_HEAD_ERRORS = (
    raised(InvalidRequest, "The head takes no parameter; details.field names the one sent."),
    UNPAID_LIMIT,
    UNAVAILABLE,
    INTERNAL,
)
LOG_PROOF_ERRORS = (
    raised(
        InvalidRequest,
        f"A size past the head, an index not below the size, or {_LOG_PARAMETER}; "
        "details.field names it.",
    ),
    UNPAID_LIMIT,
    UNAVAILABLE,
    INTERNAL,
)
LOG_CONSISTENCY_ERRORS = (
    raised(
        InvalidRequest,
        f"A size past the head, first past second, or {_LOG_PARAMETER}; details.field names it.",
    ),
    UNPAID_LIMIT,
    UNAVAILABLE,
    INTERNAL,
)

register_errors(LOG_HEAD, LOG_HEAD_ERRORS)
register_errors(LOG_PROOF, LOG_PROOF_ERRORS)
register_errors(LOG_CONSISTENCY, LOG_CONSISTENCY_ERRORS)
