"""OpenAPI pieces for billing: the payment header, and the unpaid limit's 429 on free views.

What a priced route answers for its payment (402, 409, 503) is registered with its other
errors (``billing.route_errors``) and read by its view's schema.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter

RATE_LIMITED = (
    "rate_limited: over the caller's unpaid limit (details.reason unpaid_requests); "
    "Retry-After and RateLimit say when to retry. Requests with a payment never count."
)

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

    A priced view lists it with its registered errors; a free view (samples, receipt checks)
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
