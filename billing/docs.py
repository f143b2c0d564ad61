"""What billing registers for the docs pages: payment errors, its limits, the charge rule."""

from __future__ import annotations

from django.conf import settings

from attest.registry import (
    ErrorDoc,
    Limit,
    raised,
    register_charge_rule,
    register_errors,
    register_limits,
    seconds_text,
)
from billing.charging import CHARGING_RULES, response_is_charged
from billing.core.payment_header import MAX_PAYMENT_HEADER_CHARS
from billing.exceptions import (
    FacilitatorUnavailable,
    PaymentIdentifierConflict,
    PaymentRequiredError,
    SettlementPending,
)
from billing.pricing import MAX_TIMEOUT_SECONDS
from billing.services.claims import UNCHARGED_RUNS_PER_AUTHORIZATION

PAYMENT_ERRORS = (
    raised(
        PaymentRequiredError,
        "No trial call is left and no payment was sent, or the payment was refused; "
        "details.reason says which, details.accepts holds the offer.",
    ),
    raised(FacilitatorUnavailable, "The payment facilitator cannot be reached; retry later."),
    raised(
        SettlementPending,
        "The payment was sent for settlement but not confirmed: retry the same request with "
        "the same payment, never pay again.",
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


def _payments() -> list[Limit]:
    return [
        Limit(
            "Free trial calls per caller IP per UTC day",
            f"{settings.ATTEST_TRIAL_CALLS_PER_DAY:,}",
            "402 payment_required (details.reason trial_exhausted; trial_busy while the calls left "
            "are held by calls still running), not charged",
            "ATTEST_TRIAL_CALLS_PER_DAY",
        ),
        Limit(
            "Payment header",
            f"{MAX_PAYMENT_HEADER_CHARS:,} characters",
            "402 payment_required (details.reason malformed_payment)",
        ),
        Limit(
            "Runs one authorization pays for that end uncharged (a refusal after the payment "
            "was verified)",
            str(UNCHARGED_RUNS_PER_AUTHORIZATION),
            "402 payment_required (details.reason payment_retries_used): sign a new one",
        ),
        Limit("Offer validity (maxTimeoutSeconds)", seconds_text(MAX_TIMEOUT_SECONDS), "—"),
    ]


register_charge_rule(charged)
register_errors("payment", PAYMENT_ERRORS)
register_limits("Payments and receipts", _payments)
