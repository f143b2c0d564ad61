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
