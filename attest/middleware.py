"""Middleware that gives every request an ID and puts it on the response."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from attest.logs import request_id_var

REQUEST_ID_HEADER = "X-Request-ID"
# An incoming ID is kept only if it is short and plain, so it is safe in logs and headers.
_ACCEPTABLE_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")


class RequestIDMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        incoming = request.headers.get(REQUEST_ID_HEADER, "")
        request_id = incoming if _ACCEPTABLE_ID.fullmatch(incoming) else uuid.uuid4().hex
        request.request_id = request_id
        token = request_id_var.set(request_id)
        try:
            response = self.get_response(request)
        finally:
            request_id_var.reset(token)
        response[REQUEST_ID_HEADER] = request_id
        return response
