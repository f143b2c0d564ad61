"""Project-wide views: landing page, health check, and JSON answers outside DRF."""

from __future__ import annotations

import hmac
import ipaddress
import sys

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from attest.errors import OUTAGE_RETRY_AFTER, error_body, outage_of, too_large_body, unavailable
from attest.metrics import exposition


def landing(request: HttpRequest):
    return render(request, "landing.html")


@extend_schema(
    summary="Health check",
    description="200 when the database answers a query, 503 otherwise.",
    responses={
        200: inline_serializer("Health", {"status": serializers.CharField()}),
        503: inline_serializer("Unhealthy", {"status": serializers.CharField()}),
    },
    tags=["service"],
)
@api_view(["GET"])
def healthz(request: Request) -> Response:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception:  # any database failure means unhealthy
        return Response(
            {"status": "database_unavailable"},
            status=503,
            headers={"Retry-After": str(OUTAGE_RETRY_AFTER)},
        )
    return Response({"status": "ok"})


def metrics(request: HttpRequest) -> HttpResponse:
    """GET /metrics: Prometheus text for a scraper on this host or one holding the token.

    Anyone else gets the ordinary 404, so the route's existence is not advertised. A request
    relayed by a proxy (it carries X-Forwarded-For) is not local, whatever its socket says:
    behind a load balancer on this host every caller's socket is loopback.
    """
    if not _may_scrape(request):
        return not_found(request)
    body, content_type = exposition()
    return HttpResponse(body, content_type=content_type)


def _may_scrape(request: HttpRequest) -> bool:
    token = settings.ATTEST_METRICS_TOKEN
    offered = request.headers.get("Authorization", "")
    if token and hmac.compare_digest(offered.encode(), f"Bearer {token}".encode()):
        return True
    if "X-Forwarded-For" in request.headers or "Forwarded" in request.headers:
        return False
    try:
        return ipaddress.ip_address(request.META.get("REMOTE_ADDR", "")).is_loopback
    except ValueError:
        return False


def not_found(request: HttpRequest, exception: Exception | None = None) -> JsonResponse:
    body = error_body("not_found", "Nothing was found at this address.", {"path": request.path})
    return JsonResponse(body, status=404)


def server_error(request: HttpRequest) -> JsonResponse:
    # Django calls this while handling the exception (and has logged it), so it is at hand.
    exc = sys.exc_info()[1]
    dependency = outage_of(exc) if exc is not None else None
    if exc is not None and dependency is not None:
        outage = unavailable(exc, dependency)
        response = JsonResponse(error_body(outage.code, outage.message, outage.details), status=503)
        response["Retry-After"] = str(outage.retry_after)
        return response
    body = error_body(
        "internal_error",
        "The server failed while handling this request; quote the X-Request-ID when reporting it.",
        {"request_id": getattr(request, "request_id", None)},
    )
    return JsonResponse(body, status=500)


def bad_request(request: HttpRequest, exception: Exception | None = None) -> JsonResponse:
    if isinstance(exception, RequestDataTooBig):
        return JsonResponse(error_body(*too_large_body()), status=413)
    return JsonResponse(error_body("invalid_request", "The request is malformed."), status=400)


def permission_denied(request: HttpRequest, exception: Exception | None = None) -> JsonResponse:
    return JsonResponse(error_body("forbidden", "This request is not allowed."), status=403)
