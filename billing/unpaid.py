"""The unpaid limit: free work (checks before an offer, samples, receipt checks) per caller.

Every unpaid request from one caller IP (an IPv6 caller by its /64) counts against
``ATTEST_UNPAID_RATE``; a request carrying a payment is never turned away by it, but a
payment the server refuses bought nothing and counts like an unpaid request.

With the cache down, unpaid work is refused (503, as every limit that cannot count), while
a request carrying a payment goes on to be verified: an outage never turns away a payer.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from x402.http import PAYMENT_SIGNATURE_HEADER, X_PAYMENT_HEADER

from attest.errors import RateLimited
from attest.ratelimit import RateDecision, rate_limit
from billing.client_ip import client_ip
from billing.trial import trial_bucket

POLICY = "unpaid"
JSON = "application/json"


def _decision(ip: str, *, count: bool = True) -> RateDecision:
    # Callers without an address (a Unix socket, no trusted proxy) share one bucket.
    key = trial_bucket(ip) or "unknown"
    return rate_limit(key=key, rate=settings.ATTEST_UNPAID_RATE, policy=POLICY, count=count)


def _refused(decision: RateDecision) -> RateLimited:
    return RateLimited(
        f"Over {decision.limit} unpaid requests in {decision.window} seconds from your "
        "address; retry after Retry-After seconds, or send a payment.",
        retry_after=decision.wait,
        headers=decision.headers(),
        details={"reason": "unpaid_requests", "limit": decision.limit, "window": decision.window},
    )


def payment_header(headers: Any) -> str:
    """The request's x402 payment header (v2's PAYMENT-SIGNATURE, else v1's X-PAYMENT)."""
    return headers.get(PAYMENT_SIGNATURE_HEADER) or headers.get(X_PAYMENT_HEADER) or ""


def credential_header(headers: Any) -> bool:
    """The request carries a Bearer credential (it may pay from prepaid credit)."""
    scheme, _, token = (headers.get("Authorization") or "").partition(" ")
    return scheme.lower() == "bearer" and bool(token.strip())


def limit_unpaid(
    request: Request, *, paid_exempt: bool, credit_exempt: bool = False
) -> dict[str, str]:
    """Count this request against the unpaid limit; raise ``RateLimited`` when over it.

    With ``paid_exempt`` (a priced route) a request with a payment header is not counted
    here, nor with ``credit_exempt`` one with a Bearer credential: its body is checked first
    (a bad one is 400 whatever the header says), then the payment or the credential, and
    one refused there counts as an unpaid request and is refused before any outbound work
    (``count_refused_payment``). Returns the RateLimit headers to send.
    """
    if paid_exempt and payment_header(request.headers):
        return {}
    if credit_exempt and credential_header(request.headers):
        # Paid from credit: not counted, but told where its address stands (one read).
        return _decision(client_ip(request), count=False).headers()
    decision = _decision(client_ip(request))
    if not decision.allowed:
        raise _refused(decision)
    return decision.headers()


def count_refused_payment(ip: str) -> None:
    """A refused payment counts as an unpaid request; over the limit, raise ``RateLimited``."""
    decision = _decision(ip)
    if not decision.allowed:
        raise _refused(decision)


def apply_unpaid_limit(
    view_class: Any, *, paid_exempt: bool = False, credit_exempt: bool = False
) -> Any:
    """Make every request to ``view_class`` count against the unpaid limit (see module).

    A subclass of a limited view is limited already: applying it again would count twice.
    """
    if getattr(view_class, "unpaid_limited", False):
        return view_class
    original_initial = view_class.initial
    original_finalize = view_class.finalize_response

    def initial(self, request, *args, **kwargs):
        try:
            request.rate_limit_headers = limit_unpaid(
                request, paid_exempt=paid_exempt, credit_exempt=credit_exempt
            )
        except RateLimited:
            # The refusal is the API's JSON error envelope, even on a view that renders HTML.
            request.accepted_renderer, request.accepted_media_type = JSONRenderer(), JSON
            raise
        original_initial(self, request, *args, **kwargs)

    def finalize_response(self, request, response, *args, **kwargs):
        response = original_finalize(self, request, response, *args, **kwargs)
        for name, value in getattr(request, "rate_limit_headers", {}).items():
            response.setdefault(name, value)
        return response

    view_class.initial = initial
    view_class.finalize_response = finalize_response
    view_class.unpaid_limited = True
    return view_class


def unpaid_limited(view_class: Any) -> Any:
    """Class decorator for a free view: its requests share the caller's unpaid limit."""
    return apply_unpaid_limit(view_class)
