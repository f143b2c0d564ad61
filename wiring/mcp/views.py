"""``POST /mcp``: the Model Context Protocol over streamable HTTP, stateless, JSON answers.

Dual-era (wiring.mcp.protocol): MCP 2026-07-28 requests (per-request ``_meta``,
``server/discover``, ``resultType``, cacheable lists, checked headers) and handshake-era
ones (``initialize``, 2025-11-25 to 2025-03-26) on one endpoint, with the same tools and
the same answers.

A tool call runs its REST route's own view in-process, on a request built from the call's
arguments: validation, the credential (``Authorization`` is kept), admission and payment
(billing's @priced decides the rail), the answer and its rendering are the route's, on one
path. A payment arrives as x402's MCP transport carries it (``params._meta["x402/payment"]``)
and goes to the view as the PAYMENT-SIGNATURE header; the settlement comes back in
``result._meta["x402/payment-response"]``. A 402 becomes x402's payment-required answer in
one of its two bindings: the extension binding (``resultType: "payment_required"``) for a
2026-07-28 request whose client capabilities advertise ``org.x402/payment``, else the
tool-result binding (a tool error whose structured content is the ``PaymentRequired``
object, as the x402 SDK's MCP client reads it). Any other refusal is a tool error whose
structured content is the REST error object.
"""

from __future__ import annotations

import functools
import io
import json
import time
from collections.abc import Callable
from decimal import Decimal
from typing import Any
from urllib.parse import quote, urlencode

from django.core.handlers.wsgi import WSGIRequest
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import resolve
from django.views.decorators.csrf import csrf_exempt
from mcp import types
from x402.http import (
    PAYMENT_REQUIRED_HEADER,
    PAYMENT_RESPONSE_HEADER,
    PAYMENT_SIGNATURE_HEADER,
    decode_payment_required_header,
    decode_payment_response_header,
    safe_base64_encode,
)
from x402.mcp import MCP_PAYMENT_META_KEY, MCP_PAYMENT_RESPONSE_META_KEY

from attest.errors import error_body
from attest.tracing import continued_span
from billing.pricing import priced_route
from verification.engine.pace import retry_after_seconds
from wiring.mcp import protocol
from wiring.mcp.protocol import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    Message,
    RpcError,
)
from wiring.mcp.tools import BY_NAME, Tool, tool_definition, visible_tools

SERVER = {"name": "attest", "title": "Attest", "version": "1"}
PAYMENT_EXTENSION = "org.x402/payment"
INSTRUCTIONS = (
    "Attest checks what an agent cites: verify_quote (one quote, one page), verify_quotes "
    "(several quotes, one page), verify_citations (a batch across pages, quotes or claims), "
    "fetch_page (read a page) and check_receipt (check a signed receipt). Always read "
    "page.content_kind before match. With a Bearer credential, the fact ledger's tools "
    "store messages and recall, resolve, record, retract and list facts."
)
# How long a client may keep what it was told (the 2026-07-28 caching hints). The tool list
# depends on the request's credential, so no shared cache may serve it to another caller.
TOOLS_TTL_MS = 600_000
DISCOVER_TTL_MS = 3_600_000
# Headers of the MCP request that never reach a tool's view: a payment travels in _meta.
_DROPPED = {"HTTP_PAYMENT_SIGNATURE", "HTTP_X_PAYMENT", "CONTENT_LENGTH", "CONTENT_TYPE"}
_PAYMENT_SIGNATURE_ENVIRON = "HTTP_" + PAYMENT_SIGNATURE_HEADER.upper().replace("-", "_")
_USDC_DECIMALS = 6


class _Refused(Exception):
    """Arguments that cannot become the route's request: answered as the route would."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.body = error_body("invalid_request", message, {"field": field})


def _has_credential(request: HttpRequest) -> bool:
    return request.headers.get("Authorization", "").lower().startswith("bearer ")


# ---- methods ---------------------------------------------------------------------------


def _initialize(message: Message, request: HttpRequest) -> dict[str, Any]:
    asked = message.params.get("protocolVersion")
    version = asked if asked in protocol.HANDSHAKE_VERSIONS else protocol.HANDSHAKE_VERSIONS[0]
    result = types.InitializeResult(
        protocolVersion=version,
        capabilities=types.ServerCapabilities(tools=types.ToolsCapability(listChanged=False)),
        serverInfo=types.Implementation.model_validate(SERVER),
        instructions=INSTRUCTIONS,
    )
    dumped: dict[str, Any] = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dumped


def _discover(message: Message, request: HttpRequest) -> dict[str, Any]:
    return {
        "supportedVersions": list(protocol.SUPPORTED_VERSIONS),
        "capabilities": {
            "tools": {"listChanged": False},
            "extensions": {PAYMENT_EXTENSION: {}},
        },
        "instructions": INSTRUCTIONS,
        "ttlMs": DISCOVER_TTL_MS,
        "cacheScope": "public",
    }


def _list_tools(message: Message, request: HttpRequest) -> dict[str, Any]:
    tools = visible_tools(credential=_has_credential(request))
    result: dict[str, Any] = {"tools": [tool_definition(tool.name) for tool in tools]}
    if message.modern:
        result.update(ttlMs=TOOLS_TTL_MS, cacheScope="private")
    return result


def _call_tool(message: Message, request: HttpRequest) -> dict[str, Any]:
    name = message.params.get("name")
    tool = BY_NAME.get(name) if isinstance(name, str) else None
    if tool is None or (tool.ledger and not _has_credential(request)):
        raise message.error(INVALID_PARAMS, f"Unknown tool: {name!r}.")
    arguments = message.params.get("arguments") or {}
    if not isinstance(arguments, dict):
        raise message.error(INVALID_PARAMS, "Invalid params: arguments must be an object.")
    try:
        inner, kwargs = route_request(request, tool, arguments, message.meta)
    except _Refused as refused:
        return _tool_result(JsonResponse(refused.body, status=400), tool, message)
    # The route's view is called directly, past the tracing middleware: the call is a span of
    # its own, continuing the trace a traceparent in _meta named (nothing when tracing is off).
    carrier = {name.lower(): value for name, value in inner.headers.items()}
    with continued_span(f"tools/call {tool.name}", carrier):
        response = _view(tool)(inner, **kwargs)
    return _tool_result(response, tool, message)


_HANDSHAKE_METHODS: dict[str, Callable[[Message, HttpRequest], dict[str, Any]]] = {
    "initialize": _initialize,
    "ping": lambda message, request: {},
    "tools/list": _list_tools,
    "tools/call": _call_tool,
}
# 2026-07-28 removed initialize and ping, and added server/discover.
_MODERN_METHODS: dict[str, Callable[[Message, HttpRequest], dict[str, Any]]] = {
    "server/discover": _discover,
    "tools/list": _list_tools,
    "tools/call": _call_tool,
}


def answer(message: Message, request: HttpRequest) -> dict[str, Any]:
    """The result of one request; a modern one says its result type and who answered."""
    handler = (_MODERN_METHODS if message.modern else _HANDSHAKE_METHODS).get(message.method)
    if handler is None:
        raise message.error(METHOD_NOT_FOUND, f"Method not found: {message.method!r}.")
    result = handler(message, request)
    if message.modern:
        result.setdefault("resultType", "complete")
        result["_meta"] = {**result.get("_meta", {}), protocol.SERVER_INFO_KEY: SERVER}
    return result


@csrf_exempt
def mcp_endpoint(request: HttpRequest) -> HttpResponse:
    """One JSON-RPC message per POST; GET (a server stream) is not offered, so 405."""
    if request.method != "POST":
        refusal = RpcError(
            INVALID_REQUEST,
            "The MCP endpoint takes one JSON-RPC message per POST; it offers no GET stream.",
        )
        return JsonResponse(refusal.body(), status=405, headers={"Allow": "POST"})
    try:
        message = protocol.parse(request.body, request.headers)
        if message.notification:
            return HttpResponse(status=202)  # nothing to say to notifications/initialized
        result = answer(message, request)
    except RpcError as error:
        return JsonResponse(error.body(), status=error.status)
    return JsonResponse({"jsonrpc": "2.0", "id": message.message_id, "result": result})


# ---- a tool call as its REST route -----------------------------------------------------


def _unencodable(value: Any, path: str) -> str | None:
    """The path of the first text in the arguments that is not valid Unicode (a lone
    surrogate), which no route could read: refused here, before it reaches one."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return path or "arguments"
        return None
    items = (
        value.items()
        if isinstance(value, dict)
        else enumerate(value)
        if isinstance(value, list)
        else ()
    )
    for key, item in items:
        if isinstance(key, str) and _unencodable(key, path) is not None:
            return path or "arguments"
        found = _unencodable(
            item, f"{path}[{key}]" if isinstance(key, int) else f"{path}.{key}".lstrip(".")
        )
        if found is not None:
            return found
    return None


@functools.cache
def _view(tool: Tool) -> Callable[..., HttpResponse]:
    """The route's view, found once: a path parameter is passed to it, never parsed back."""
    parameter = tool.path_parameter
    path = tool.path.replace("{" + parameter + "}", "_") if parameter else tool.path
    view: Callable[..., HttpResponse] = resolve(path).func
    return view


def route_request(
    outer: HttpRequest, tool: Tool, arguments: dict[str, Any], meta: dict[str, Any]
) -> tuple[WSGIRequest, dict[str, str]]:
    """The REST request a tool call stands for, carrying the MCP request's caller (its
    headers, ``Authorization`` included), its payment and its trace context; and the path
    parameter the view takes."""
    field = _unencodable(arguments, "")
    if field is not None:
        raise _Refused("The text is not valid Unicode (it holds a lone surrogate).", field)
    rest, kwargs, path = dict(arguments), {}, tool.path
    if (parameter := tool.path_parameter) is not None:
        value = rest.pop(parameter, None)
        if not isinstance(value, str) or not value:
            raise _Refused(f"{parameter} is required: a non-empty string.", parameter)
        kwargs[parameter] = value
        path = tool.path.replace("{" + parameter + "}", quote(value, safe=""))
    body = b"" if tool.method == "GET" else json.dumps(rest).encode()
    environ = {key: value for key, value in outer.META.items() if key not in _DROPPED}
    environ.update(
        {
            "REQUEST_METHOD": tool.method,
            "PATH_INFO": path,
            "SCRIPT_NAME": "",
            "QUERY_STRING": urlencode(rest, doseq=True) if tool.method == "GET" else "",
            "HTTP_ACCEPT": "application/json",
            "wsgi.input": io.BytesIO(body),
        }
    )
    if body:
        environ.update({"CONTENT_TYPE": "application/json", "CONTENT_LENGTH": str(len(body))})
    payment = meta.get(MCP_PAYMENT_META_KEY)
    if payment is not None:
        environ[_PAYMENT_SIGNATURE_ENVIRON] = safe_base64_encode(json.dumps(payment))
    # The trace context in _meta becomes the inner request's own W3C headers, where the
    # service's tracing (standard propagation) reads a parent; without tracing, nothing does.
    for key, value in protocol.trace_context(meta).items():
        environ[f"HTTP_{key.upper()}"] = value
    inner = WSGIRequest(environ)
    for name in ("request_id", "client_request_id"):
        if hasattr(outer, name):
            setattr(inner, name, getattr(outer, name))
    return inner, kwargs


def _rendered(response: HttpResponse) -> HttpResponse:
    if hasattr(response, "render") and not getattr(response, "is_rendered", True):
        response.render()
    return response


def price_sentence(tool: Tool) -> str:
    """What an LLM host shows beside an offer: the price and both ways to pay, one sentence."""
    price = priced_route(tool.priced).price if tool.priced else "a price"
    return (
        f"{tool.name} costs {price} (USDC) per call: pay with x402 (an x402 MCP client pays "
        f'the offer above and retries with the payment in _meta["x402/payment"]) or with a '
        "credit credential (send Authorization: Bearer <credential> holding prepaid credit, "
        "bought at POST /v1/credits)."
    )


def _with_retry_after(body: Any, response: HttpResponse) -> Any:
    """The REST error object with ``details.retry_after`` (seconds) when the route said
    Retry-After, so a tool error keeps what the HTTP header told a REST caller."""
    seconds = retry_after_seconds(response.headers.get("Retry-After"), now=time.time())
    error = body.get("error") if isinstance(body, dict) else None
    if seconds is None or not isinstance(error, dict):
        return body
    details = error.get("details")
    details = details if isinstance(details, dict) else {}
    whole = Decimal(str(seconds)).to_integral_value(rounding="ROUND_CEILING")
    return {**body, "error": {**error, "details": {**details, "retry_after": int(whole)}}}


def _tool_result(response: HttpResponse, tool: Tool, message: Message) -> dict[str, Any]:
    """A route's answer as an MCP result: its body, field for field, both ways."""
    response = _rendered(response)
    meta: dict[str, Any] = {}
    settled = response.headers.get(PAYMENT_RESPONSE_HEADER)
    if settled:
        meta[MCP_PAYMENT_RESPONSE_META_KEY] = decode_payment_response_header(settled).model_dump(
            mode="json", by_alias=True, exclude_none=True
        )
    offer = response.headers.get(PAYMENT_REQUIRED_HEADER)
    if response.status_code == 402 and offer:
        required = decode_payment_required_header(offer).model_dump(
            mode="json", by_alias=True, exclude_none=True
        )
        if message.modern and message.advertises(PAYMENT_EXTENSION):
            return {"resultType": "payment_required", "paymentRequired": required, "_meta": meta}
        # The tool-result binding: the PaymentRequired object is the structured content and
        # the first text; the sentence for a reader and the API's error object follow.
        content = [json.dumps(required), price_sentence(tool), response.content.decode()]
        return _result(content, required, error=True, meta=meta)
    text = response.content.decode()
    body = json.loads(text) if text else {}
    ok = 200 <= response.status_code < 300
    if not ok and (amended := _with_retry_after(body, response)) is not body:
        body, text = amended, json.dumps(amended)
    return _result([text], body, error=not ok, meta=meta)


def _result(
    texts: list[str], structured: Any, *, error: bool, meta: dict[str, Any]
) -> dict[str, Any]:
    result: dict[str, Any] = {
        "content": [{"type": "text", "text": text} for text in texts],
        "structuredContent": structured if isinstance(structured, dict) else {"items": structured},
        "isError": error,
    }
    if meta:
        result["_meta"] = meta
    return result
