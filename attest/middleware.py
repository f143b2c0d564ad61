"""Middleware: every request's ID of the server's own, and query strings that are UTF-8."""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Callable
from urllib.parse import unquote_to_bytes

from django.http import HttpRequest, HttpResponse, JsonResponse

from attest.errors import error_body
from attest.logs import client_request_id_var, request_id_var
from attest.metrics import REQUEST_SECONDS, REQUESTS
from attest.parsers import NOT_UNICODE, printable

REQUEST_ID_HEADER = "X-Request-ID"
# An incoming ID is kept only if it is short and plain, so it is safe in logs and headers.
_ACCEPTABLE_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")


class RequestIDMiddleware:
    """The server makes every request's ID; a caller's X-Request-ID is kept beside it.

    A caller could otherwise give two calls one ID, or reuse another call's, and the
    receipts, logs and records that name the ID would no longer tell calls apart.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        incoming = request.headers.get(REQUEST_ID_HEADER, "")
        request_id = uuid.uuid4().hex
        client_request_id = incoming if _ACCEPTABLE_ID.fullmatch(incoming) else None
        # On the request too: Django logs a 4xx/5xx answer with the request after this
        # middleware has returned and reset the context (attest.logs reads them there).
        request.request_id = request_id  # type: ignore[attr-defined]
        request.client_request_id = client_request_id  # type: ignore[attr-defined]
        token = request_id_var.set(request_id)
        client_token = client_request_id_var.set(client_request_id)
        try:
            response = self.get_response(request)
        finally:
            client_request_id_var.reset(client_token)
            request_id_var.reset(token)
        response[REQUEST_ID_HEADER] = request_id
        return response


def invalid_query_parameter(query_string: str) -> str | None:
    """The name of the first query parameter whose name or value is not UTF-8, if any.

    ``query_string`` is as WSGI gives it: the raw bytes read as Latin-1. Django would
    read bytes that are not UTF-8 as U+FFFD, so a route would see other text than sent.
    """
    try:
        raw = query_string.encode("latin-1")
    except UnicodeEncodeError:  # not from raw bytes: already text
        return None
    for pair in raw.split(b"&"):
        name, _, value = (
            unquote_to_bytes(part.replace(b"+", b" ")) for part in pair.partition(b"=")
        )
        try:
            shown = name.decode("utf-8")
        except UnicodeDecodeError:
            return printable(name.decode("utf-8", "surrogateescape"))
        try:
            value.decode("utf-8")
        except UnicodeDecodeError:
            return shown
    return None


class QueryTextMiddleware:
    """Refuses a query string that is not UTF-8 with 400 ``invalid_request`` naming the
    parameter, on every route, before any view reads it (the JSON body's text is checked
    by attest.parsers)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        name = invalid_query_parameter(request.META.get("QUERY_STRING", ""))
        if name is None:
            return self.get_response(request)
        body = error_body(
            "invalid_request",
            f"{name}: the query parameter {NOT_UNICODE}",
            {"field": name, "errors": [{"field": name, "message": f"The value {NOT_UNICODE}"}]},
        )
        return JsonResponse(body, status=400)


class RequestMetricsMiddleware:
    """Counts and times every answer by the URL pattern's name, never the path.

    A path carries IDs (a fact, a project): as a label each would be a new series, and a
    caller could grow the metrics without bound. A path no pattern matched is "unmatched".
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        response = self.get_response(request)
        match = request.resolver_match
        route = (match.view_name or "unnamed") if match is not None else "unmatched"
        method = request.method if request.method in _METHODS else "other"
        REQUEST_SECONDS.labels(route, method).observe(time.perf_counter() - started)
        REQUESTS.labels(route, method, str(response.status_code)).inc()
        return response


# Any other method string a caller sends is one label value, not one series per string.
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
