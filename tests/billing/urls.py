"""A test-only URLconf: one priced view per route that can end in every kind of outcome."""

from __future__ import annotations

import time

from django.urls import path
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from attest import errors
from attest.lazyviews import lazy_view
from attest.schema import route_error_responses
from billing.decorators import priced
from billing.models import PaymentClaim
from billing.openapi import PAYMENT_PARAMETERS
from billing.pricing import PRICED_ROUTES
from billing.route_errors import PAYMENT

# Each non-charged error a real priced view may raise after payment, as the seeds list them.
UNCHARGED = {
    "blocked": lambda: errors.Blocked(),
    "robots_disallowed": lambda: errors.Blocked(
        "robots.txt disallows it.", code="robots_disallowed"
    ),
    "host_not_found": lambda: errors.Unprocessable("No such host.", code="host_not_found"),
    "match_too_costly": lambda: errors.Unprocessable("Too costly.", code="match_too_costly"),
    "rate_limited": lambda: errors.RateLimited(
        retry_after=10, details={"reason": "uncharged_failures"}
    ),
    "over_capacity": lambda: errors.OverCapacity(
        retry_after=3, details={"reason": "match_queue_full"}
    ),
    "not_on_edge": lambda: errors.NotOnEdge(details={"reason": "pdf"}),
}
# Page results: always charged, whatever the page turned out to be.
PAGES = {
    "real": {"http_status": 200, "content_kind": "real"},
    "http_404": {"http_status": 404, "content_kind": "http_error"},
    "bot_wall": {"http_status": 403, "content_kind": "bot_wall"},
    "timeout": {"http_status": None, "content_kind": "timeout"},
}


class Body(serializers.Serializer):
    # "hold": a real page result, after the work is held for a minute when the request's
    # X-Request-ID starts with "hold-" (so a test can kill the worker mid-work).
    outcome = serializers.ChoiceField(
        choices=[*UNCHARGED, *PAGES, "crash", "hold", "overrun"], default="real"
    )
    citations = serializers.IntegerField(default=1, min_value=1, max_value=10)


def priced_test_view(route: str):
    def precheck(request):
        body = Body(data=request.data)
        body.is_valid(raise_exception=True)
        return body.validated_data

    @priced(route, precheck=precheck, trial_size=lambda data: data["citations"])
    class PricedTestView(APIView):
        @extend_schema(
            request=Body,
            parameters=PAYMENT_PARAMETERS,
            responses={
                200: OpenApiTypes.OBJECT,
                400: OpenApiTypes.OBJECT,
                **route_error_responses(PAYMENT),
            },
        )
        def post(self, request, *, call):
            outcome = call.prechecked["outcome"]
            if outcome in UNCHARGED:
                raise UNCHARGED[outcome]()
            if outcome == "crash":
                raise RuntimeError("the work broke")
            if outcome == "overrun":
                # As if this work outlived its lease and a retry freed the claim meanwhile.
                PaymentClaim.objects.filter(pk=call.payment.claim.pk).update(
                    state="released", outcome="abandoned_mid_work", lease_until=None
                )
                outcome = "real"
            if outcome == "hold":
                if (request.client_request_id or "").startswith("hold-"):
                    time.sleep(60)
                outcome = "real"
            return Response(
                {
                    "page": PAGES[outcome],
                    "seen_tier": call.tier,
                    "seen_payer": call.payment.payer if call.payment else None,
                    # Which request's work produced this answer: a stored answer sent again
                    # names the first request, work done again names the retry (by the
                    # caller's X-Request-ID when it sent one, else the server's ID).
                    "work_request_id": request.client_request_id or request.request_id,
                }
            )

    return PricedTestView.as_view()


class MethodPricedView(APIView):
    """The decorator on one handler instead of the class."""

    @priced("fetch")
    def get(self, request, *, call):
        return Response(
            {
                "page": PAGES["real"],
                "seen_tier": call.tier,
                "seen_payer": call.payment.payer if call.payment else None,
                # billing hands the handler its context; it hangs nothing on the request
                "billing_on_request": [
                    name for name in ("prechecked", "tier", "payment") if hasattr(request, name)
                ],
            }
        )


urlpatterns = [path(f"v1/test/{name}", priced_test_view(name)) for name in PRICED_ROUTES]
urlpatterns.append(path("v1/test-method/fetch", MethodPricedView.as_view()))
# Where docs/billing.md's client example posts; the body it sends is a real page result here.
urlpatterns.append(path("v1/verify/quote", priced_test_view("verify/quote")))
# Prepaid credit is bought here as on the real URLconf (citations.api.credit_views).
urlpatterns.append(
    path("v1/credits", lazy_view("citations.api.credit_views.CreditsView"), name="credits")
)
