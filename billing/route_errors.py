"""What a priced route can answer for its payment, and whether an error is charged,
registered once: the priced views' schemas (``attest.schema.route_error_responses``), the
docs pages and the docs check read these."""

from __future__ import annotations

from attest.registry import ErrorDoc, raised, register_charge_rule, register_errors
from billing.charging import CHARGING_RULES, response_is_charged
from billing.exceptions import (
    FacilitatorUnavailable,
    PaymentIdentifierConflict,
    PaymentRequiredError,
    SettlementPending,
)
from billing.owners import InvalidCredential

# The errors every priced route adds to its own, registered under this name.
PAYMENT = "payment"
PAYMENT_ERRORS = (
    raised(
        PaymentRequiredError,
        "No trial call is left and no payment was sent, or the payment was refused: the x402 "
        "v2 offer, base64 in the PAYMENT-REQUIRED header and in details.accepts; "
        "details.reason says why (payment_required, trial_exhausted, trial_busy, "
        "trial_too_large, payment_already_used, payment_retries_used, "
        "authorization_expires_too_soon, malformed_payment_identifier, or the facilitator's "
        "verify reason), or insufficient_credit: a Bearer credential's prepaid balance, in "
        "details.balance, is less than the price.",
    ),
    raised(
        InvalidCredential,
        "A Bearer credential and no payment header, but the credential is unknown, revoked "
        "or its project suspended: never run as a free trial.",
    ),
    raised(FacilitatorUnavailable, "The payment facilitator cannot be reached; retry later."),
    raised(
        SettlementPending,
        "The payment was sent for settlement but not confirmed, or its work is still running "
        "(details.reason settlement_pending, work_in_progress, facilitator_no_answer): retry "
        "the same request with the same payment after Retry-After, never pay again.",
    ),
    raised(
        PaymentIdentifierConflict,
        "The payment's payment-identifier already paid for another request (details.reason "
        "other_request), or for this one but its answer is no longer kept (answer_expired); "
        "send a new identifier.",
    ),
)
# The limit on free work per caller IP (ATTEST_UNPAID_RATE, billing.unpaid): checks before
# an offer, samples, receipt checks. A request carrying a payment never counts.
UNPAID_LIMIT = ErrorDoc(
    429,
    "rate_limited",
    "Too many unpaid requests from this caller IP (details.reason unpaid_requests); retry "
    "after Retry-After.",
)


def charged(status: int, code: str) -> bool:
    """Whether an answer with this status and code is charged (billing.charging's table)."""
    rule = next((rule for rule in CHARGING_RULES if rule.code == code), None)
    if rule is not None:
        return rule.charged
    return response_is_charged(status=status, charged=None)


register_charge_rule(charged)
register_errors(PAYMENT, PAYMENT_ERRORS)
