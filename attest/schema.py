"""OpenAPI pieces every app's routes share: the error envelope, its codes, and the contract.

``error_response`` documents one error status of a route with the codes it can carry (an
``enum``, and one example each); ``route_error_responses`` builds every error status of a
route from the errors its app registered (``attest.registry``), so the schema, the docs
page and the docs check read one list. ``document_contract`` (a drf-spectacular postprocessing
hook) then adds what every route shares, by walking the schema's operations, so a new
route gets it without a line of its own: the public ``servers`` entry, ``X-Request-ID``
on every answer, ``Retry-After`` on every 429 and 503, the RateLimit headers on limited
routes, the x402 headers on priced ones, ``400 invalid_json``, ``413`` and ``415`` where
a body is read, ``503 unavailable`` (a database or cache outage) and ``500``.
``name_operations`` (another hook) gives each operation its ``operationId`` from
``OPERATION_IDS``, the one table of them: a route without an entry stops the schema.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers

from attest.registry import ErrorDoc, registered_errors


class ErrorBody(serializers.Serializer):
    class Meta:
        ref_name = "ErrorBody"

    code = serializers.CharField(help_text="Stable snake_case code, e.g. invalid_request.")
    message = serializers.CharField(help_text="One sentence a person can act on.")
    details = serializers.DictField(help_text="e.g. field, reason, limit_bytes, accepts.")


class ErrorEnvelope(serializers.Serializer):
    """The shape of every error the API answers (attest.errors renders it)."""

    class Meta:
        ref_name = "Error"

    error = ErrorBody()


# Codes an error description may name, beyond those of AttestError subclasses: the
# ones views raise with a code= of their own, and DRF's (attest.errors maps them).
_EXTRA_CODES = {
    "invalid_json",
    "unauthenticated",
    "forbidden",
    "method_not_allowed",
    "not_acceptable",
    "unsupported_media_type",
    "request_too_large",
    "internal_error",
    "payment_required",
}
_TOKEN = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*")


def known_codes() -> set[str]:
    """Every code an AttestError subclass carries, plus the handler's own."""
    from attest.errors import AttestError

    codes, pending = set(_EXTRA_CODES), [AttestError]
    while pending:
        cls = pending.pop()
        codes.add(cls.code)
        pending.extend(cls.__subclasses__())
    return codes


def codes_named_in(description: str) -> list[str]:
    """The error codes a description names, in order (reasons and field names are not)."""
    known = known_codes()
    found: list[str] = []
    for token in _TOKEN.findall(description):
        if token in known and token not in found:
            found.append(token)
    return found


def error_response(description: str, codes: Iterable[str] | None = None) -> OpenApiResponse:
    """A documented error status: the envelope, with ``codes`` (else those named) as its enum."""
    listed = list(codes) if codes is not None else codes_named_in(description)
    return OpenApiResponse(error_schema(listed), description=description)


def error_schema(codes: list[str]) -> dict[str, Any]:
    code: dict[str, Any] = {"type": "string", "description": "Stable snake_case code."}
    if codes:
        code["enum"] = list(codes)
    return {
        "type": "object",
        "required": ["error"],
        "properties": {
            "error": {
                "type": "object",
                "required": ["code", "message", "details"],
                "properties": {
                    "code": code,
                    "message": {"type": "string", "description": "One sentence to act on."},
                    "details": {
                        "type": "object",
                        "description": "e.g. field, reason, limit_bytes, accepts.",
                    },
                },
            }
        },
    }


def route_error_responses(route: str) -> dict[int, OpenApiResponse]:
    """A route's documented error statuses, built from the errors its app registered
    (``attest.registry``), so its schema, its docs page and the docs check read one list.

    Each status lists its codes (the enum) and what each means; on a priced route (one that
    can answer 402) each says whether it is charged. The errors every route shares (500,
    503 unavailable, and 400 invalid_json, 413 and 415 where a body is read) are left to
    ``document_contract``, which adds them to every operation alike.
    """
    registered = registered_errors(route)
    priced = any(doc.status == 402 for doc in registered)
    by_status: dict[int, list[ErrorDoc]] = {}
    for doc in registered:
        if (str(doc.status), doc.code) not in _CONTRACT_ERRORS:
            by_status.setdefault(doc.status, []).append(doc)
    return {
        status: OpenApiResponse(
            error_schema(list(dict.fromkeys(doc.code for doc in docs))),
            description=" ".join(_error_line(doc, priced=priced) for doc in docs),
        )
        for status, docs in sorted(by_status.items())
    }


def _error_line(doc: ErrorDoc, *, priced: bool) -> str:
    line = f"{doc.code}: {doc.when}"
    if priced:
        line += " Charged." if doc.charged else " Not charged."
    return line


# --- the contract every route shares (postprocessing hook) ------------------------

_JSON = "application/json"
_REQUEST_ID = {
    "description": "The ID the server made for this call (logs, records, receipts).",
    "required": True,
    "schema": {"type": "string", "pattern": "^[0-9a-f]{32}$"},
}
_RETRY_AFTER = {
    "description": "Seconds to wait before retrying.",
    "required": True,
    "schema": {"type": "integer", "minimum": 1},
}
_RATE_LIMIT = {
    "RateLimit-Policy": {
        "description": 'The quota and its window in seconds, e.g. `"unpaid";q=300;w=60`.',
        "schema": {"type": "string"},
    },
    "RateLimit": {
        "description": 'What is left and seconds until the window resets: `"unpaid";r=17;t=42`.',
        "schema": {"type": "string"},
    },
}
_PAYMENT_REQUIRED = {
    "description": "The x402 v2 offer (PaymentRequired), base64 JSON.",
    "required": True,
    "schema": {"type": "string"},
}
_PAYMENT_RESPONSE = {
    "description": "On a paid answer: the settlement (x402 SettlementResponse), base64 JSON.",
    "schema": {"type": "string"},
}
# The answers any operation can give, with the codes they carry and what they mean.
_SHARED = {
    "500": ("internal_error", "An unexpected failure, logged under the X-Request-ID."),
    "503": (
        "unavailable",
        "unavailable: the database or cache did not answer (details.dependency); retry.",
    ),
}
_BODY = {
    "400": ("invalid_json", "invalid_json: the body is not JSON."),
    "413": ("request_too_large", "request_too_large: the body is over ATTEST_MAX_BODY_BYTES."),
    "415": ("unsupported_media_type", "unsupported_media_type: send application/json."),
}
_CONTRACT_ERRORS = {(status, code) for status, (code, _) in (*_SHARED.items(), *_BODY.items())}


def _error_content(response: dict) -> dict | None:
    schema = response.get("content", {}).get(_JSON, {}).get("schema")
    if isinstance(schema, dict) and schema.get("$ref") == "#/components/schemas/Error":
        # A response documented with the bare envelope: give it its own schema.
        codes = codes_named_in(response.get("description", ""))
        response["content"][_JSON]["schema"] = error_schema(codes)
        schema = response["content"][_JSON]["schema"]
    if not isinstance(schema, dict) or "error" not in schema.get("properties", {}):
        return None
    code = schema["properties"]["error"]["properties"]["code"]
    # A JSON-RPC error object (/mcp) has an integer code: not the envelope's to extend.
    return code if code.get("type") == "string" else None


def _add_error(responses: dict, status: str, code: str, description: str) -> None:
    response = responses.setdefault(
        status, {"description": description, "content": {_JSON: {"schema": error_schema([])}}}
    )
    code_schema = _error_content(response)
    if code_schema is None:
        return
    if "enum" in code_schema and code not in code_schema["enum"]:
        code_schema["enum"].append(code)
    elif "enum" not in code_schema:
        code_schema["enum"] = [code]
    if description not in response["description"]:
        response["description"] = f"{response['description']} Or {description}".strip()


def _examples(response: dict) -> None:
    """One example per code, with the message the API gives (no generated placeholders)."""
    from attest.errors import AttestError

    code_schema = _error_content(response)
    if code_schema is None or not code_schema.get("enum"):
        return
    messages: dict[str, str] = {}
    pending = [AttestError]
    while pending:
        cls = pending.pop()
        messages.setdefault(cls.code, cls.message)
        pending.extend(cls.__subclasses__())
    examples = {}
    for code in code_schema["enum"]:
        message = messages.get(code) or response["description"]
        examples[code] = {"value": {"error": {"code": code, "message": message, "details": {}}}}
    response["content"][_JSON]["examples"] = examples


_BLANK = {"type": "string", "maxLength": 0}


def _collapse_blank_alternatives(node: Any) -> None:
    """drf-spectacular writes an allow_blank string as ``oneOf: [string, empty string]``:
    "" matches both, and oneOf refuses a value two alternatives match. The string
    alternative takes "" already, so it alone is the schema."""
    if isinstance(node, dict):
        alternatives = node.get("oneOf")
        if (
            isinstance(alternatives, list)
            and len(alternatives) == 2
            and alternatives[1] == _BLANK
            and alternatives[0].get("type") == "string"
            and alternatives[0].get("minLength", 0) == 0
        ):
            del node["oneOf"]
            node.update({**alternatives[0], **node})
        for value in node.values():
            _collapse_blank_alternatives(value)
    elif isinstance(node, list):
        for value in node:
            _collapse_blank_alternatives(value)


def document_contract(result: dict, generator: Any, **kwargs: Any) -> dict:
    _collapse_blank_alternatives(result.get("components", {}))
    result["servers"] = [{"url": settings.ATTEST_PUBLIC_URL, "description": "This service."}]
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            document_operation(operation)
    return result


def document_operation(operation: dict, *, body_statuses: Iterable[str] | None = None) -> None:
    """What every route shares, added to one operation's answers; ``body_statuses``: which
    of the body errors (400 invalid_json, 413, 415) it gives, all when it reads a body."""
    responses = operation.setdefault("responses", {})
    for status, (code, description) in _SHARED.items():
        _add_error(responses, status, code, description)
    if body_statuses is None:
        body_statuses = _BODY if "requestBody" in operation else ()
    for status in body_statuses:
        code, description = _BODY[status]
        _add_error(responses, status, code, description)
    _document_headers(responses)


def _document_headers(responses: dict) -> None:
    limited = "429" in responses
    for status, response in responses.items():
        headers = response.setdefault("headers", {})
        headers["X-Request-ID"] = _REQUEST_ID
        if status in ("429", "503"):
            headers["Retry-After"] = _RETRY_AFTER
        if limited:
            headers.update(_RATE_LIMIT)
        if status == "402":
            headers["PAYMENT-REQUIRED"] = _PAYMENT_REQUIRED
        if "402" in responses and status.startswith("2"):
            headers["PAYMENT-RESPONSE"] = _PAYMENT_RESPONSE
        if int(status) >= 400:
            _examples(response)


# --- operation IDs (postprocessing hook) ------------------------------------------

# Every operation's operationId, by method and path: snake_case identifiers a code
# generator (and an MCP tool list) can use as they are; the Python client's methods
# follow the same words. A new route adds its line here, or the schema is not built.
OPERATION_IDS: dict[tuple[str, str], str] = {
    ("get", "/healthz"): "healthz_get",
    ("get", "/.well-known/jwks.json"): "jwks_get",
    ("post", "/v1/verify/quote"): "verify_quote",
    ("post", "/v1/verify/quotes"): "verify_quotes",
    ("post", "/v1/verify/citations"): "verify_citations",
    ("post", "/v1/fetch"): "fetch_page",
    ("post", "/v1/credits"): "credits_buy",
    ("get", "/v1/credits"): "credits_read",
    ("get", "/v1/sample/quote"): "sample_quote",
    ("get", "/v1/sample/citations"): "sample_citations",
    ("get", "/v1/sample/page"): "sample_page",
    ("get", "/v1/sample/missing"): "sample_missing",
    ("post", "/v1/receipt/verify"): "receipt_verify",
    ("get", "/v1/log/head"): "log_head",
    ("get", "/v1/log/proof"): "log_proof",
    ("get", "/v1/log/consistency"): "log_consistency",
    ("post", "/v1/observations"): "observations_ingest",
    ("post", "/v1/recall"): "facts_recall",
    ("post", "/v1/changes"): "changes_list",
    ("get", "/v1/subjects"): "subjects_list",
    ("post", "/v1/citations/resolve"): "citation_resolve",
    ("get", "/v1/facts"): "facts_list",
    ("post", "/v1/facts"): "fact_create",
    ("post", "/v1/facts/{fact_id}/retract"): "fact_retract",
    ("get", "/v1/predicates"): "predicates_list",
    ("post", "/v1/predicates"): "predicate_declare",
    ("post", "/v1/rebuilds"): "rebuild_start",
    ("get", "/v1/rebuilds/{generation_id}"): "rebuild_get",
    ("post", "/v1/erasures"): "erasure_create",
    ("get", "/v1/subjects/{subject}/export"): "subject_export",
    ("post", "/mcp"): "mcp_message",
}
_HTTP_METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}


def _describes_the_api(generator: Any) -> bool:
    """Whether ``generator`` reads the service's own routes (not a test's URLconf)."""
    urlconf = getattr(generator, "urlconf", None) or settings.ROOT_URLCONF
    return getattr(urlconf, "__name__", urlconf) == settings.ATTEST_API_URLCONF


def name_operations(result: dict, generator: Any, **kwargs: Any) -> dict:
    """Set each operationId from OPERATION_IDS; the service's schema must name them all."""
    missing = []
    for path, operations in result.get("paths", {}).items():
        for method, operation in operations.items():
            if method not in _HTTP_METHODS:
                continue
            name = OPERATION_IDS.get((method, path))
            if name is None:
                missing.append(f"{method.upper()} {path}")
            else:
                operation["operationId"] = name
    if missing and _describes_the_api(generator):
        raise ImproperlyConfigured(
            f"No operationId for {', '.join(missing)}: add it to attest.schema.OPERATION_IDS."
        )
    return result
