"""The JSON-RPC envelope of ``POST /mcp`` and the era each message belongs to.

Pure: bytes and a header mapping in, a :class:`Message` (or an :class:`RpcError` with the
HTTP status the streamable HTTP transport gives it) out. Two eras share the endpoint
(MCP's "dual-era" server):

- **modern** (2026-07-28): no handshake; every request carries its protocol version and
  client capabilities in ``params._meta`` and mirrors its version, method and tool name in
  the ``MCP-Protocol-Version``, ``Mcp-Method`` and ``Mcp-Name`` headers, which must agree
  with the body;
- **handshake era** (2025-11-25, 2025-06-18, 2025-03-26): ``initialize`` first, then
  requests that carry at most an ``MCP-Protocol-Version`` header naming the negotiated
  version.

A request is modern when its header names a version that has no handshake, or when its
``_meta`` carries a protocol version; everything else is handshake-era.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

MODERN_VERSIONS = ("2026-07-28",)
HANDSHAKE_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26")
SUPPORTED_VERSIONS = MODERN_VERSIONS + HANDSHAKE_VERSIONS  # newest first
# Every revision that opened with `initialize`, ours or not: a header naming one of them is
# handshake-era traffic even when we do not speak that revision.
_ALL_HANDSHAKE_VERSIONS = (*HANDSHAKE_VERSIONS, "2024-11-05")

PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo"
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"
# W3C trace context: the only unprefixed _meta keys the specification reserves.
TRACE_KEYS = ("traceparent", "tracestate", "baggage")

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
HEADER_MISMATCH = -32020
UNSUPPORTED_PROTOCOL_VERSION = -32022

# The modern transport's status for each error code (its "Protocol Version Header" and
# "Server Validation" sections); anything else is an ordinary 200 answer. Handshake-era
# requests get 200 for every error about a well-formed request, as their transport says.
_MODERN_STATUS = {
    PARSE_ERROR: 400,
    INVALID_REQUEST: 400,
    INVALID_PARAMS: 400,
    HEADER_MISMATCH: 400,
    UNSUPPORTED_PROTOCOL_VERSION: 400,
    METHOD_NOT_FOUND: 404,
}
_NAME_PARAM = {"tools/call": "name", "resources/read": "uri", "prompts/get": "name"}
_BASE64_SENTINEL = re.compile(r"=\?base64\?(?P<payload>.*)\?=")


class RpcError(Exception):
    """A JSON-RPC error, with the id it answers (None when the id could not be read)."""

    def __init__(
        self,
        code: int,
        message: str,
        *,
        message_id: Any = None,
        data: Any = None,
        modern: bool = True,
    ) -> None:
        super().__init__(message)
        self.code, self.message, self.message_id, self.data = code, message, message_id, data
        self.modern = modern

    @property
    def status(self) -> int:
        """The HTTP status: malformed messages are 400 in both eras."""
        if self.modern or self.code in (PARSE_ERROR, INVALID_REQUEST):
            return _MODERN_STATUS.get(self.code, 200)
        return 200

    def body(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return {"jsonrpc": "2.0", "id": self.message_id, "error": error}


@dataclass(frozen=True)
class Message:
    """One well-formed JSON-RPC request or notification."""

    method: str
    params: dict[str, Any]
    message_id: Any = None
    notification: bool = False
    modern: bool = False
    capabilities: Mapping[str, Any] = field(default_factory=dict)

    @property
    def meta(self) -> dict[str, Any]:
        meta = self.params.get("_meta")
        return meta if isinstance(meta, dict) else {}

    def error(self, code: int, message: str, data: Any = None) -> RpcError:
        return RpcError(code, message, message_id=self.message_id, data=data, modern=self.modern)

    def advertises(self, extension: str) -> bool:
        """Whether the request's client capabilities name an extension (modern era only)."""
        extensions = self.capabilities.get("extensions")
        return isinstance(extensions, Mapping) and extension in extensions


def _envelope(body: bytes) -> dict[str, Any]:
    """The decoded JSON-RPC object, or the -32700/-32600 error that says why not."""
    try:
        decoded = json.loads(body.decode("utf-8"))
    except UnicodeDecodeError:
        raise RpcError(PARSE_ERROR, "Parse error: the body is not UTF-8.") from None
    except (ValueError, RecursionError):
        raise RpcError(PARSE_ERROR, "Parse error: the body is not JSON.") from None
    if not isinstance(decoded, dict):
        raise RpcError(
            INVALID_REQUEST,
            "Invalid request: the body must be one JSON-RPC request object (not a batch, "
            "an array, a string or a number).",
        )
    return decoded


def _valid_id(message: dict[str, Any]) -> Any:
    """The request's id: a string or an integer (MCP forbids null; JSON-RPC discourages floats)."""
    message_id = message["id"]
    if isinstance(message_id, str) or (
        isinstance(message_id, int) and not isinstance(message_id, bool)
    ):
        return message_id
    raise RpcError(INVALID_REQUEST, "Invalid request: id must be a string or an integer.")


def parse(body: bytes, headers: Mapping[str, str]) -> Message:
    """The message a POST carries, its era decided and (modern) its envelope checked."""
    message = _envelope(body)
    message_id = _valid_id(message) if "id" in message else None
    method = message.get("method")
    if message.get("jsonrpc") != "2.0" or not isinstance(method, str):
        raise RpcError(
            INVALID_REQUEST,
            'Invalid request: a JSON-RPC 2.0 request has "jsonrpc": "2.0" and a string method.',
            message_id=message_id,
        )
    params = message.get("params", {})
    notification = "id" not in message
    if notification:
        return Message(method, params if isinstance(params, dict) else {}, notification=True)
    if not isinstance(params, dict):
        raise RpcError(
            INVALID_PARAMS, "Invalid params: params must be an object.", message_id=message_id
        )
    header = headers.get("MCP-Protocol-Version")
    meta = params.get("_meta")
    if (header is not None and header not in _ALL_HANDSHAKE_VERSIONS) or (
        method != "initialize" and isinstance(meta, dict) and PROTOCOL_VERSION_KEY in meta
    ):
        return _modern(Message(method, params, message_id, modern=True), headers)
    if header is not None and header not in HANDSHAKE_VERSIONS:
        raise _unsupported(header, message_id, modern=False)
    return Message(method, params, message_id)


def _unsupported(requested: Any, message_id: Any, *, modern: bool = True) -> RpcError:
    return RpcError(
        UNSUPPORTED_PROTOCOL_VERSION,
        f"Unsupported protocol version {requested!r}; this server speaks "
        f"{', '.join(SUPPORTED_VERSIONS)}.",
        message_id=message_id,
        data={"supported": list(SUPPORTED_VERSIONS), "requested": requested},
        modern=modern,
    )


def _modern(message: Message, headers: Mapping[str, str]) -> Message:
    """The 2026-07-28 checks, in the order the specification's reference ladder runs them."""
    meta = message.params.get("_meta")
    if not isinstance(meta, dict):
        raise message.error(
            INVALID_PARAMS,
            f"Invalid params: params._meta must carry {PROTOCOL_VERSION_KEY} and "
            f"{CLIENT_CAPABILITIES_KEY}.",
        )
    missing = [key for key in (PROTOCOL_VERSION_KEY, CLIENT_CAPABILITIES_KEY) if key not in meta]
    if missing:
        raise message.error(
            INVALID_PARAMS, f"Invalid params: params._meta lacks {', '.join(missing)}."
        )
    version = meta[PROTOCOL_VERSION_KEY]
    _check_headers(message, headers, version)
    if not isinstance(version, str):
        raise message.error(
            INVALID_PARAMS, "Invalid params: the protocol version must be a string."
        )
    if version not in MODERN_VERSIONS:
        raise _unsupported(version, message.message_id)
    capabilities = meta[CLIENT_CAPABILITIES_KEY]
    if not isinstance(capabilities, dict):
        raise message.error(
            INVALID_PARAMS, "Invalid params: client capabilities must be an object."
        )
    return Message(
        message.method, message.params, message.message_id, modern=True, capabilities=capabilities
    )


def decode_header_value(value: str | None) -> str | None:
    """A mirrored header's value, its ``=?base64?…?=`` form decoded; None when malformed."""
    if value is None:
        return None
    sentinel = _BASE64_SENTINEL.fullmatch(value)
    if sentinel is None:
        return value
    payload = sentinel.group("payload")
    try:
        decoded = base64.b64decode(payload, validate=True)
        if base64.b64encode(decoded).decode("ascii") != payload:
            return None  # not the canonical encoding a client emits
        return decoded.decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None


def _check_headers(message: Message, headers: Mapping[str, str], version: Any) -> None:
    """The mirrored headers must be present and say what the body says (-32020)."""
    if headers.get("MCP-Protocol-Version") != version:
        raise message.error(
            HEADER_MISMATCH,
            "Header mismatch: MCP-Protocol-Version must be sent and equal the protocol "
            "version in params._meta.",
        )
    if headers.get("Mcp-Method") != message.method:
        raise message.error(
            HEADER_MISMATCH, "Header mismatch: Mcp-Method must be sent and equal the method."
        )
    name_param = _NAME_PARAM.get(message.method)
    named = message.params.get(name_param) if name_param else None
    if named is not None and decode_header_value(headers.get("Mcp-Name")) != named:
        raise message.error(
            HEADER_MISMATCH,
            f"Header mismatch: Mcp-Name must be sent and equal params.{name_param}.",
        )


def trace_context(meta: Mapping[str, Any]) -> dict[str, str]:
    """The W3C trace context a request's ``_meta`` carries, as HTTP header values.

    Values that are not strings, or that could not be an HTTP header value, are left out
    (tracing is advisory: a bad value never fails the call).
    """
    return {
        key: value
        for key in TRACE_KEYS
        if isinstance(value := meta.get(key), str) and value.isascii() and value.isprintable()
    }
