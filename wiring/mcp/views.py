"""``POST /mcp``: the Model Context Protocol over streamable HTTP, stateless, JSON answers.

A tool call runs its REST route's own view in-process, on a request built from the call's
arguments: validation, the credential, admission and payment (billing's @priced), the
answer and its rendering are the route's, on one path. A payment arrives as x402's MCP
transport carries it (``params._meta["x402/payment"]``) and goes to the view as the
PAYMENT-SIGNATURE header; the settlement comes back in ``result._meta
["x402/payment-response"]``; an offer is a tool error whose structured content is the x402
``PaymentRequired`` object, as the x402 SDK's MCP server wrapper signals it.
"""

from __future__ import annotations

import io
import json
import logging
from typing import Any
from urllib.parse import urlencode

from django.core.handlers.wsgi import WSGIRequest
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import resolve
from django.views.decorators.csrf import csrf_exempt
from mcp import types
from mcp.shared.version import SUPPORTED_PROTOCOL_VERSIONS
from x402.http import (
    PAYMENT_REQUIRED_HEADER,
    PAYMENT_RESPONSE_HEADER,
    PAYMENT_SIGNATURE_HEADER,
    decode_payment_required_header,
    decode_payment_response_header,
    safe_base64_encode,
)
from x402.mcp import MCP_PAYMENT_META_KEY, MCP_PAYMENT_RESPONSE_META_KEY

from wiring.mcp.tools import BY_NAME, Tool, mcp_tool, visible_tools

logger = logging.getLogger("attest.mcp")

SERVER = types.Implementation(name="attest", version="1")
INSTRUCTIONS = (
    "Attest checks what an agent cites: verify_quote (one quote, one page), verify_quotes "
    "(several quotes, one page), verify_citations (a batch across pages, quotes or claims), "
    "fetch_page (read a page) and check_receipt (check a signed receipt). Always read "
    "page.content_kind before match. With a Bearer credential, the fact ledger's tools "
    "store messages and recall, resolve, record, retract and list facts."
)
# Headers of the MCP request that never reach a tool's view: a payment travels in _meta.
_DROPPED = {"HTTP_PAYMENT_SIGNATURE", "HTTP_X_PAYMENT", "CONTENT_LENGTH", "CONTENT_TYPE"}


class RpcError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


def _error(message_id: Any, code: int, message: str) -> dict[str, Any]:
    error = types.JSONRPCError(
        jsonrpc="2.0", id=message_id, error=types.ErrorData(code=code, message=message)
    )
    return error.model_dump(mode="json", by_alias=True, exclude_none=True)


def _dump(result: types.Result) -> dict[str, Any]:
    return result.model_dump(mode="json", by_alias=True, exclude_none=True)


def _initialize(params: dict[str, Any], request: HttpRequest) -> dict[str, Any]:
    asked = params.get("protocolVersion")
    version = asked if asked in SUPPORTED_PROTOCOL_VERSIONS else types.LATEST_PROTOCOL_VERSION
    return _dump(
        types.InitializeResult(
            protocolVersion=version,
            capabilities=types.ServerCapabilities(tools=types.ToolsCapability(listChanged=False)),
            serverInfo=SERVER,
            instructions=INSTRUCTIONS,
        )
    )


def _has_credential(request: HttpRequest) -> bool:
    return request.headers.get("Authorization", "").lower().startswith("bearer ")


def _list_tools(params: dict[str, Any], request: HttpRequest) -> dict[str, Any]:
    tools = visible_tools(credential=_has_credential(request))
    return _dump(types.ListToolsResult(tools=[mcp_tool(tool.name) for tool in tools]))


def _route_request(outer: HttpRequest, tool: Tool, arguments: dict, payment: Any) -> WSGIRequest:
    """The REST request a tool call stands for, carrying the MCP request's caller."""
    path, rest = tool.path_for(arguments)
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
    if payment is not None:
        header = PAYMENT_SIGNATURE_HEADER.upper().replace("-", "_")
        environ[f"HTTP_{header}"] = safe_base64_encode(json.dumps(payment))
    inner = WSGIRequest(environ)
    for name in ("request_id", "client_request_id"):
        if hasattr(outer, name):
            setattr(inner, name, getattr(outer, name))
    return inner


def _run_view(request: WSGIRequest) -> HttpResponse:
    match = resolve(request.path_info)
    response = match.func(request, *match.args, **match.kwargs)
    if hasattr(response, "render") and not getattr(response, "is_rendered", True):
        response.render()
    return response


def tool_result(response: HttpResponse) -> types.CallToolResult:
    """A route's answer as an MCP tool result: its body, field for field, both ways."""
    text = response.content.decode()
    body = json.loads(text) if text else {}
    meta: dict[str, Any] = {}
    settled = response.headers.get(PAYMENT_RESPONSE_HEADER)
    if settled:
        meta[MCP_PAYMENT_RESPONSE_META_KEY] = decode_payment_response_header(settled).model_dump(
            mode="json", by_alias=True, exclude_none=True
        )
    offer = response.headers.get(PAYMENT_REQUIRED_HEADER)
    if response.status_code == 402 and offer:
        # x402's MCP convention: the PaymentRequired object is the structured content (and
        # the first text); the API's error object follows as the second text.
        required = decode_payment_required_header(offer).model_dump(
            mode="json", by_alias=True, exclude_none=True
        )
        return types.CallToolResult(
            content=[
                types.TextContent(type="text", text=json.dumps(required)),
                types.TextContent(type="text", text=text),
            ],
            structuredContent=required,
            isError=True,
            _meta=meta or None,
        )
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structuredContent=body if isinstance(body, dict) else {"items": body},
        isError=not 200 <= response.status_code < 300,
        _meta=meta or None,
    )


def _call_tool(params: dict[str, Any], request: HttpRequest) -> dict[str, Any]:
    name = params.get("name")
    tool = BY_NAME.get(name) if isinstance(name, str) else None
    if tool is None or (tool.ledger and not _has_credential(request)):
        raise RpcError(types.INVALID_PARAMS, f"Unknown tool: {name!r}.")
    arguments = params.get("arguments") or {}
    if not isinstance(arguments, dict):
        raise RpcError(types.INVALID_PARAMS, "arguments must be an object.")
    meta = params.get("_meta") or {}
    payment = meta.get(MCP_PAYMENT_META_KEY) if isinstance(meta, dict) else None
    response = _run_view(_route_request(request, tool, arguments, payment))
    return _dump(tool_result(response))


_METHODS = {
    "initialize": _initialize,
    "ping": lambda params, request: {},
    "tools/list": _list_tools,
    "tools/call": _call_tool,
}


def _answer(message: Any, request: HttpRequest) -> dict[str, Any] | None:
    """The JSON-RPC answer to one message, or None for a notification."""
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return _error(None, types.INVALID_REQUEST, "Not a JSON-RPC 2.0 message.")
    if "id" not in message:
        return None  # a notification (notifications/initialized, cancelled): nothing to say
    message_id, method = message["id"], message.get("method")
    if method is None:
        return None  # a response to a request we never send
    handler = _METHODS.get(method)
    if handler is None:
        return _error(message_id, types.METHOD_NOT_FOUND, f"Method not found: {method!r}.")
    params = message.get("params") or {}
    if not isinstance(params, dict):
        return _error(message_id, types.INVALID_PARAMS, "params must be an object.")
    try:
        result = handler(params, request)
    except RpcError as exc:
        return _error(message_id, exc.code, exc.message)
    return {"jsonrpc": "2.0", "id": message_id, "result": result}


@csrf_exempt
def mcp_endpoint(request: HttpRequest) -> HttpResponse:
    """One JSON-RPC message per POST; GET (a server stream) is not offered, so 405."""
    if request.method != "POST":
        return HttpResponse(status=405, headers={"Allow": "POST"})
    try:
        message = json.loads(request.body)
    except (ValueError, UnicodeDecodeError):
        return JsonResponse(_error(None, types.PARSE_ERROR, "The body is not JSON."), status=400)
    answer = _answer(message, request)
    if answer is None:
        return HttpResponse(status=202)
    return JsonResponse(answer)
