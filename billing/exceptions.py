"""Billing's refusals, all in the project's one error envelope."""

from __future__ import annotations

from typing import Any

from django.conf import settings

from attest.errors import AttestError

# Where a 402's message sends a caller: the payments docs, with working clients, and the
# prepaid credit a caller without a wallet pays with.
PAYMENTS_DOCS_PATH = "/docs/payments"
CREDITS_DOCS_PATH = "/docs/credits"


class PaymentRequiredError(AttestError):
    """402 with the x402 offer in the header and the body."""

    status_code = 402
    code = "payment_required"
    message = (
        "This route is paid: sign the offer in PAYMENT-REQUIRED and send it as PAYMENT-SIGNATURE."
    )

    def __init__(
        self,
        message: str | None = None,
        *,
        reason: str,
        offer: dict[str, Any],
        header: str,
        **extra: Any,
    ):
        details = {
            "reason": reason,
            **extra,
            "x402Version": offer["x402Version"],
            "accepts": offer["accepts"],
        }
        if offer.get("resource"):
            details["resource"] = offer["resource"]
        public = settings.ATTEST_PUBLIC_URL.rstrip("/")
        super().__init__(
            f"{message or self.message} Without a wallet, pay from prepaid credit: send "
            f"Authorization: Bearer <credential> ({public}{CREDITS_DOCS_PATH}). How to pay "
            f"over x402, with a working client: {public}{PAYMENTS_DOCS_PATH}",
            details=details,
            headers={"PAYMENT-REQUIRED": header},
        )


class FacilitatorUnavailable(AttestError):
    """The facilitator could not be reached; nothing was charged."""

    status_code = 503
    code = "facilitator_unavailable"
    message = (
        "The payment facilitator is unreachable; nothing was charged. "
        "Retry after Retry-After seconds."
    )

    def __init__(self, message: str | None = None, **kwargs: Any):
        kwargs.setdefault("retry_after", 10)
        super().__init__(message, **kwargs)


class SettlementPending(AttestError):
    """Settlement was sent but not confirmed: never an invitation to pay again."""

    status_code = 503
    code = "settlement_pending"
    message = (
        "Your payment was sent for settlement but not confirmed yet. Do not pay again: "
        "the authorization stays reserved while it is reconciled."
    )

    def __init__(self, message: str | None = None, **kwargs: Any):
        kwargs.setdefault("retry_after", 30)
        super().__init__(message, **kwargs)


class PaymentIdentifierConflict(AttestError):
    """A payment identifier already used for another request, or whose answer is gone."""

    status_code = 409
    code = "payment_identifier_conflict"
    message = (
        "This payment identifier already paid for another request; nothing was charged. "
        "Send a new identifier with a new payment."
    )
