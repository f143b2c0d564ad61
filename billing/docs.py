"""What billing registers for the docs pages: its limits (the payment errors and the
charge rule are registered by ``billing.route_errors``, imported here for discovery)."""

from __future__ import annotations

from django.conf import settings

from attest.registry import (
    Limit,
    register_limits,
    seconds_text,
)
from billing import route_errors  # noqa: F401 (registers the payment errors, charge rule)
from billing.core.payment_header import MAX_PAYMENT_HEADER_CHARS
from billing.pricing import MAX_TIMEOUT_SECONDS
from billing.services.claims import UNCHARGED_RUNS_PER_AUTHORIZATION


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


register_limits("Payments and receipts", _payments)
