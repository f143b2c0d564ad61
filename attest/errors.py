"""The project's exception type and the one handler that renders every API error.

Every error leaves the API as ``{"error": {"code", "message", "details"}}``.
Services raise :class:`AttestError` (or a subclass) with a stable snake_case
code; DRF and Django exceptions are translated here so a client only ever
has to parse one shape.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from functools import cache
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.db import InterfaceError, OperationalError
from django.http import Http404
from rest_framework import exceptions as drf
from rest_framework import status
from rest_framework.response import Response

logger = logging.getLogger("attest.errors")


class AttestError(Exception):
    """A refusal with a stable code that the API shows to the client."""

    status_code: int = status.HTTP_400_BAD_REQUEST
    code: str = "invalid_request"
    message: str = "The request could not be processed."

    def __init__(
        self,
        message: str | None = None,
        *,
        code: str | None = None,
        status_code: int | None = None,
        details: Mapping[str, Any] | None = None,
        retry_after: int | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.message = message or self.message
        self.code = code or self.code
        self.status_code = status_code or self.status_code
        self.details = dict(details or {})
        self.retry_after = retry_after
        self.headers = dict(headers or {})
        super().__init__(self.message)


class InvalidRequest(AttestError):
    status_code = 400
    code = "invalid_request"
    message = "The request is malformed."

    def __init__(self, message: str | None = None, *, field: str | None = None, **kwargs: Any):
        details = dict(kwargs.pop("details", None) or {})
        if field is not None:
            details.setdefault("field", field)
        super().__init__(message, details=details, **kwargs)


class NotFound(AttestError):
    status_code = 404
    code = "not_found"
    message = "Nothing was found at this address."


class Blocked(AttestError):
    status_code = 403
    code = "blocked"
    message = "That address may not be fetched."


class Unprocessable(AttestError):
    status_code = 422
    code = "unprocessable"


class RateLimited(AttestError):
    status_code = 429
    code = "rate_limited"
    message = "Too many requests; retry after the number of seconds in Retry-After."


class OverCapacity(AttestError):
    status_code = 503
    code = "over_capacity"
    message = "The service is at capacity; retry after the number of seconds in Retry-After."


class Unavailable(AttestError):
    status_code = 503
    code = "unavailable"
    message = "A service Attest depends on did not answer; retry after the seconds in Retry-After."


class CountUnreadable(Exception):
    """The cache answered but did not give a rate limit's count (read twice)."""


# What a dependency that refuses, drops or times out a connection raises: a restart, a
# failover, a full disk. Such an outage is temporary, so it is a 503 to retry, not a 500.
DATABASE_OUTAGES = (OperationalError, InterfaceError)


# django-redis raises Redis's own connection and timeout errors (ConnectionInterrupted is
# its wrapper, raised where it does not unwrap them); a rate limit's count the cache
# would not give even on a second read is an outage too.
# The tuple is built by its first reader (``from attest.errors import CACHE_OUTAGES`` or a
# handled error): the Redis client takes a fifth of a second to import, which a manage.py
# command, importing this module through the admin, should not pay.
@cache
def cache_outages() -> tuple[type[BaseException], ...]:
    import redis
    from django_redis.exceptions import ConnectionInterrupted

    return (redis.ConnectionError, redis.TimeoutError, ConnectionInterrupted, CountUnreadable)


def __getattr__(name: str) -> Any:
    if name == "CACHE_OUTAGES":
        return cache_outages()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# Seconds a client should wait: a PostgreSQL or Redis restart takes about this long.
OUTAGE_RETRY_AFTER = 5


def outage_of(exc: BaseException | None) -> str | None:
    """Which dependency an exception says is down (``database`` or ``cache``), if any."""
    if isinstance(exc, DATABASE_OUTAGES):
        return "database"
    if isinstance(exc, cache_outages()):
        return "cache"
    return None


def unavailable(exc: BaseException, dependency: str) -> Unavailable:
    """The 503 for a dependency outage, logged with its traceback and the request ID.

    Any use of the cache that has not chosen otherwise fails closed here: a limit or a
    capacity slot that cannot be counted refuses the work rather than allow all of it.
    """
    logger.error("%s unavailable: %s", dependency, exc, exc_info=exc)
    return Unavailable(
        f"Attest's {dependency} did not answer; retry after the seconds in Retry-After.",
        details={"dependency": dependency},
        retry_after=OUTAGE_RETRY_AFTER,
    )


class NotOnEdge(AttestError):
    status_code = 501
    code = "not_on_edge"
    message = "This edge server cannot do that; use the full service."


# DRF's own exceptions, mapped to our codes and plain messages.
_DRF_CODES: dict[type[drf.APIException], tuple[str, str]] = {
    drf.ParseError: ("invalid_json", "The request body is not valid JSON."),
    drf.NotAuthenticated: ("unauthenticated", "Send a credential: Authorization: Bearer <token>."),
    drf.AuthenticationFailed: ("unauthenticated", "The credential is unknown or revoked."),
    drf.PermissionDenied: ("forbidden", "This credential may not do that."),
    drf.NotFound: ("not_found", "Nothing was found at this address."),
    drf.MethodNotAllowed: ("method_not_allowed", "This route does not accept that HTTP method."),
    drf.NotAcceptable: ("not_acceptable", "This route answers in application/json only."),
    drf.UnsupportedMediaType: ("unsupported_media_type", "Send the body as application/json."),
    drf.Throttled: ("rate_limited", "Too many requests; retry after Retry-After seconds."),
}


def error_body(code: str, message: str, details: Mapping[str, Any] | None = None) -> dict:
    return {"error": {"code": code, "message": message, "details": dict(details or {})}}


def field_path(parts: list[str | int]) -> str:
    """Render ["citations", 2, "quote"] as ``citations[2].quote``."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part == "non_field_errors":
            continue
        else:
            out += f".{part}" if out else str(part)
    return out


def flatten_validation_errors(detail: Any, path: list[str | int] | None = None) -> list[dict]:
    """Turn DRF's nested error detail into ``[{"field": "a[1].b", "message": ...}]``."""
    path = path or []
    if isinstance(detail, Mapping):
        items: list[dict] = []
        for key, value in detail.items():
            items += flatten_validation_errors(value, [*path, key])
        return items
    if isinstance(detail, list):
        if all(isinstance(item, drf.ErrorDetail | str) for item in detail):
            return [{"field": field_path(path), "message": str(item)} for item in detail]
        items = []
        for index, value in enumerate(detail):
            if value:  # DRF puts {} for list members that were valid.
                items += flatten_validation_errors(value, [*path, index])
        return items
    return [{"field": field_path(path), "message": str(detail)}]


def _validation_response(exc: drf.ValidationError) -> tuple[str, str, dict]:
    errors = flatten_validation_errors(exc.detail)
    first = errors[0] if errors else {"field": "", "message": "The request is invalid."}
    details: dict[str, Any] = {"errors": errors}
    if first["field"]:
        details["field"] = first["field"]
    message = first["message"]
    if first["field"]:
        message = f"{first['field']}: {message}"
    return "invalid_request", message, details


def too_large_body() -> tuple[str, str, dict]:
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    return (
        "request_too_large",
        f"The request body is larger than {limit:,} bytes; send less in one request.",
        {"limit_bytes": limit},
    )


def client_code(exc: BaseException) -> str:
    """The error code the handler below shows the client for ``exc`` (for logs and audit)."""
    if outage_of(exc) is not None:
        return Unavailable.code
    if isinstance(exc, AttestError):
        return exc.code
    if isinstance(exc, drf.ValidationError):
        return "invalid_request"
    if isinstance(exc, RequestDataTooBig):
        return "request_too_large"
    if isinstance(exc, Http404):
        return "not_found"
    if isinstance(exc, DjangoPermissionDenied):
        return "forbidden"
    if isinstance(exc, drf.APIException):
        return _DRF_CODES.get(type(exc), (str(exc.default_code), ""))[0]
    return "server_error"


def api_exception_handler(exc: Exception, context: Mapping[str, Any]) -> Response | None:
    """DRF's EXCEPTION_HANDLER: every error becomes the one envelope."""
    headers: dict[str, str] = {}
    dependency = outage_of(exc)
    if dependency is not None:
        exc = unavailable(exc, dependency)
    if isinstance(exc, AttestError):
        status_code, code, message, details = exc.status_code, exc.code, exc.message, exc.details
        headers.update(exc.headers)
        if exc.retry_after is not None:
            headers["Retry-After"] = str(exc.retry_after)
    elif isinstance(exc, drf.ValidationError):
        status_code = 400
        code, message, details = _validation_response(exc)
    elif isinstance(exc, RequestDataTooBig):
        status_code = 413
        code, message, details = too_large_body()
    elif isinstance(exc, Http404):
        status_code, code, message, details = 404, *_DRF_CODES[drf.NotFound], {}
    elif isinstance(exc, DjangoPermissionDenied):
        status_code, code, message, details = 403, *_DRF_CODES[drf.PermissionDenied], {}
    elif isinstance(exc, drf.NotAuthenticated | drf.AuthenticationFailed):
        # DRF downgrades these to 403 when a view has no authenticator; a missing or
        # bad credential is a 401 here, always, with the Bearer challenge.
        status_code, details = 401, {}
        code, message = _DRF_CODES[type(exc)]
        headers["WWW-Authenticate"] = 'Bearer realm="attest"'
    elif isinstance(exc, drf.APIException):
        status_code = exc.status_code
        code, message = _DRF_CODES.get(type(exc), (str(exc.default_code), str(exc.detail)))
        details = {}
        if isinstance(exc, drf.MethodNotAllowed | drf.ParseError | drf.UnsupportedMediaType):
            details["reason"] = str(exc.detail)
        wait = getattr(exc, "wait", None)
        if wait is not None:
            headers["Retry-After"] = str(max(1, int(wait + 0.999)))
    else:
        return None  # Unknown: Django logs it and the 500 handler answers.

    return Response(error_body(code, message, details), status=status_code, headers=headers)
