"""OpenAPI responses every priced route adds to its own ``extend_schema``."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter

from attest.schema import error_response

PAYMENT_RESPONSES = {
    402: error_response(
        (
            "payment_required: the x402 v2 offer, base64 in the PAYMENT-REQUIRED header and in "
            "details.accepts; details.reason says why (payment_required, trial_exhausted, "
            "trial_too_large, payment_already_used, authorization_expires_too_soon, or the "
            "facilitator's verify reason)."
        ),
    ),
    503: error_response(
        (
            "facilitator_unavailable (nothing charged) or settlement_pending (payment sent, not "
            "confirmed: do not pay again), or the route's own over_capacity."
        ),
    ),
}

PAYMENT_PARAMETERS = [
    OpenApiParameter(
        "PAYMENT-SIGNATURE",
        OpenApiTypes.STR,
        OpenApiParameter.HEADER,
        description="x402 v2 payment payload, base64 (X-PAYMENT is accepted for v1 clients).",
    ),
]
