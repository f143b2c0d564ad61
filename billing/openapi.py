"""OpenAPI pieces for billing: what priced routes answer, and the unpaid limit's 429."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter

from attest.schema import error_response

RATE_LIMITED = (
    "rate_limited: over the caller's unpaid limit (details.reason unpaid_requests); "
    "Retry-After and RateLimit say when to retry. Requests with a payment never count."
)

PAYMENT_RESPONSES = {
    402: error_response(
        (
            "payment_required: the x402 v2 offer, base64 in the PAYMENT-REQUIRED header and in "
            "details.accepts; details.reason says why (payment_required, trial_exhausted, "
            "trial_busy, trial_too_large, payment_already_used, payment_retries_used, "
            "authorization_expires_too_soon, malformed_payment_identifier, "
            "or the facilitator's verify reason)."
        ),
    ),
    409: error_response(
        (
            "payment_identifier_conflict: the payment's x402 payment-identifier already paid "
            "for another request (details.reason other_request), or for this one but its "
            "answer is no longer kept (answer_expired); nothing charged."
        ),
    ),
    429: error_response(RATE_LIMITED),
    503: error_response(
        (
            "facilitator_unavailable (nothing charged), or settlement_pending: the payment was "
            "sent for settlement or its work is still running (details.reason "
            "settlement_pending, work_in_progress, facilitator_no_answer); do not pay again, "
            "retry the same request with the same payment after Retry-After. Or the route's own "
            "over_capacity."
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


def document_unpaid_limit(result: dict, generator: Any, **kwargs: Any) -> dict:
    """drf-spectacular hook: every operation of a view under the unpaid limit lists its 429.

    A priced view lists it in ``PAYMENT_RESPONSES``; a free view (samples, receipt checks)
    gains it here, so applying ``@unpaid_limited`` is the only line such a view needs.
    """
    envelope = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    for path, _regex, method, callback in generator.endpoints:
        if not getattr(getattr(callback, "cls", None), "unpaid_limited", False):
            continue
        view = generator.create_view(callback, method)
        operation = result["paths"].get(generator.coerce_path(path, method, view), {})
        responses = operation.get(method.lower(), {}).get("responses")
        if responses is not None:
            responses.setdefault("429", {"description": RATE_LIMITED, "content": envelope})
    return result
