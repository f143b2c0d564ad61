"""The OpenAPI entry for ``/mcp`` (a drf-spectacular postprocessing hook).

``/mcp`` is a plain Django view that speaks JSON-RPC 2.0 (the MCP streamable HTTP transport,
one message per POST), not a DRF route, so the generator does not see it. DESIGN.md asks
the schema to name every route: this hook writes the transport's contract, generic to
every JSON-RPC message (the tools themselves are listed by ``tools/list``), without
touching the view.
"""

from __future__ import annotations

import copy
from typing import Any

from django.urls import NoReverseMatch, reverse

from attest.schema import document_operation

_JSON = "application/json"
_ID = {
    "description": "The request's ID, echoed in its response; absent in a notification.",
    "oneOf": [{"type": "string"}, {"type": "integer"}],
}
_VERSION = {"type": "string", "enum": ["2.0"]}
_MESSAGE = {
    "type": "object",
    "description": (
        "One JSON-RPC 2.0 request (with an id) or notification (without): an MCP method "
        "such as initialize, tools/list or tools/call, and its params."
    ),
    "required": ["jsonrpc", "method"],
    "properties": {
        "jsonrpc": _VERSION,
        "id": _ID,
        "method": {"type": "string", "example": "tools/list"},
        "params": {
            "type": "object",
            "description": "The method's parameters, as the MCP specification gives them.",
            "example": {"name": "verify_quote", "arguments": {"url": "…", "quote": "…"}},
        },
    },
    "example": {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
}
_ERROR = {
    "type": "object",
    "required": ["code", "message"],
    "properties": {
        "code": {
            "type": "integer",
            "description": "e.g. -32700 parse error, -32600 invalid request.",
        },
        "message": {"type": "string"},
        "data": {},
    },
}
_RESULT = {
    "type": "object",
    "required": ["jsonrpc", "id", "result"],
    "properties": {
        "jsonrpc": _VERSION,
        "id": _ID,
        "result": {
            "type": "object",
            "description": "The method's result, as the MCP specification gives it.",
            "example": {"tools": [{"name": "verify_quote", "description": "…"}]},
        },
    },
}
_ERROR_ANSWER = {
    "type": "object",
    "required": ["jsonrpc", "id", "error"],
    "properties": {
        "jsonrpc": _VERSION,
        "id": {**_ID, "nullable": True, "description": "null when the request's ID is unknown."},
        "error": _ERROR,
    },
}

MCP_PATH = {
    "post": {
        "operationId": "mcp_message",
        "summary": "MCP (JSON-RPC 2.0 over HTTP)",
        "description": (
            "The Model Context Protocol's streamable HTTP transport, one JSON-RPC message "
            "per POST: the routes as tools for an agent's MCP client. A tool call runs its "
            "REST route; a priced one asks for payment as x402 over MCP. See /docs/mcp. "
            "The transport's server-to-client stream is not offered: any other method is "
            "405 with `Allow: POST` and a JSON-RPC error object."
        ),
        "tags": ["mcp"],
        "requestBody": {"required": True, "content": {_JSON: {"schema": _MESSAGE}}},
        "responses": {
            "200": {
                "description": "The JSON-RPC response: a result, or an error object.",
                "content": {_JSON: {"schema": {"oneOf": [_RESULT, _ERROR_ANSWER]}}},
            },
            "202": {"description": "A notification (no id) was accepted; no body."},
            "400": {
                "description": "The body is not a JSON-RPC message (parse error -32700, "
                "invalid request -32600): a JSON-RPC error object.",
                "content": {_JSON: {"schema": _ERROR_ANSWER}},
            },
        },
    },
}


def document_mcp(result: dict, generator: Any, **kwargs: Any) -> dict:
    """Add ``/mcp`` to the service's schema (not a test's URLconf without the route), with
    what every route shares: the request ID, 500, the outage 503, and 413 for a body over
    the limit (the transport reads any content type, so no 415; a body that is not JSON
    is its own 400, a JSON-RPC parse error)."""
    try:
        path = reverse("mcp", urlconf=getattr(generator, "urlconf", None))
    except NoReverseMatch:
        return result
    item = copy.deepcopy(MCP_PATH)
    for method, operation in item.items():
        document_operation(operation, body_statuses=("413",) if method == "post" else ())
    result.setdefault("paths", {})[path] = item
    return result
