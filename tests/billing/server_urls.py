"""URLs of the crash tests' server processes: the priced test views, the health check, and
the payment ledger as JSON (the tests' only window on a database they may not share)."""

from __future__ import annotations

import datetime

from django.http import JsonResponse
from django.urls import path
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt

from attest import views
from billing.models import PaidAnswer, PaymentClaim, Settlement
from tests.billing.urls import urlpatterns as priced_patterns


def ledger(request, payer: str):
    claims = PaymentClaim.objects.filter(payer=payer.lower()).order_by("created_at")
    return JsonResponse(
        {
            "claims": [
                {"state": c.state, "outcome": c.outcome, "request_id": c.request_id} for c in claims
            ],
            "settlements": list(
                Settlement.objects.filter(claim__in=claims).values_list("success", flat=True)
            ),
            "answers": PaidAnswer.objects.filter(claim__in=claims).count(),
        }
    )


@csrf_exempt
def end_leases(request, payer: str):
    """Time passing: the leases of this payer's claims in flight run out now."""
    ended = PaymentClaim.objects.filter(
        payer=payer.lower(), state__in=["claimed", "settling"]
    ).update(lease_until=timezone.now() - datetime.timedelta(seconds=1))
    return JsonResponse({"ended": ended})


urlpatterns = [
    *priced_patterns,
    path("healthz", views.healthz),
    path("test-ledger/<str:payer>", ledger),
    path("test-ledger/<str:payer>/end-leases", end_leases),
]
