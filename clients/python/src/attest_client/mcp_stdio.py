"""``attest mcp``: a remote Attest's ``/mcp`` over stdio, as a plain JSON-RPC forwarder.

Each line the local MCP client writes (one JSON-RPC message) is POSTed to the service's
``/mcp`` and the answer written back as one line, so the tools, their schemas, the eras and
the answers are exactly the service's: a 2026-07-28 client's ``server/discover`` and
per-request ``_meta``, and a handshake-era client's ``initialize``, alike. The forwarder
adds only what HTTP needs: the ``MCP-Protocol-Version``/``Mcp-Method``/``Mcp-Name``
headers a modern message mirrors (and, after ``initialize``, the version it negotiated),
``Authorization: Bearer $ATTEST_CREDENTIAL``, and, with ``ATTEST_PAYER_KEY``, the payment:
a tool call answered with an x402 offer (either binding) is paid with the x402 SDK and
sent again with the payment in ``_meta["x402/payment"]``. A call that carries its own
payment is forwarded as it came.
"""

from __future__ import annotations

import base64
import json
import sys
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import IO, Any

import httpx

from attest_client.errors import AttestError
from attest_client.transport import Payer

PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
PAYMENT_KEY = "x402/payment"
_NAME_PARAM = {"tools/call": "name", "resources/read": "uri", "prompts/get": "name"}
_INTERNAL_ERROR = -32603


def header_value(value: str) -> str:
    """A value as an HTTP header carries it: verbatim when plain ASCII, else the
    specification's ``=?base64?…?=`` form."""
    plain = value.isascii() and value.isprintable() and value == value.strip()
    if plain and not (value.startswith("=?base64?") and value.endswith("?=")):
        return value
    return f"=?base64?{base64.b64encode(value.encode()).decode('ascii')}?="


def offer_in(result: Any) -> dict[str, Any] | None:
    """The x402 ``PaymentRequired`` a tool result carries, in either x402 MCP binding."""
    if not isinstance(result, dict):
        return None
    if result.get("resultType") == "payment_required":
        offer = result.get("paymentRequired")
    elif result.get("isError"):
        offer = result.get("structuredContent")
    else:
        return None
    return offer if isinstance(offer, dict) and "accepts" in offer else None


class Forwarder:
    """One stdio client's link to the remote ``/mcp``."""

    def __init__(
        self, url: str, *, credential: str | None, payer_key: str | None, http: Any = None
    ) -> None:
        self.url = url.rstrip("/") + "/mcp"
        self.http = http or httpx.Client(timeout=300, trust_env=False)
        self.credential = credential
        # The payer (the x402 SDK and eth_account take seconds to import) is made beside the
        # first messages, not before them: a 2026-07-28 client's stdio probe has a deadline.
        self._payer: Future[Payer] | None = None
        if payer_key:
            self._payer = ThreadPoolExecutor(max_workers=1).submit(Payer, payer_key)
            self._payer.add_done_callback(_report_bad_key)
        self.negotiated: str | None = None  # a handshake-era client's version, once agreed

    def _headers(self, message: Any) -> dict[str, str]:
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        }
        if self.credential:
            headers["Authorization"] = f"Bearer {self.credential}"
        if not isinstance(message, dict) or not isinstance(message.get("method"), str):
            return headers
        params = _object(message.get("params"))
        meta = _object(params.get("_meta"))
        version = meta.get(PROTOCOL_VERSION_KEY)
        if isinstance(version, str):  # a 2026-07-28 message mirrors itself in headers
            headers["MCP-Protocol-Version"] = version
            headers["Mcp-Method"] = header_value(message["method"])
            named = params.get(_NAME_PARAM.get(message["method"], ""))
            if isinstance(named, str):
                headers["Mcp-Name"] = header_value(named)
        elif self.negotiated and message["method"] != "initialize":
            headers["MCP-Protocol-Version"] = self.negotiated
        return headers

    def _post(self, raw: bytes, message: Any) -> Any:
        """The remote's answer to one message: a JSON-RPC object, or None (a notification)."""
        message_id = message.get("id") if isinstance(message, dict) else None
        try:
            response = self.http.post(self.url, content=raw, headers=self._headers(message))
        except httpx.HTTPError as exc:
            return _error(message_id, f"The Attest service did not answer: {exc}")
        if response.status_code == 202:
            return None
        try:
            return response.json()
        except ValueError:
            return _error(message_id, f"The Attest service answered HTTP {response.status_code}.")

    def _paid(self, message: dict[str, Any], offer: dict[str, Any]) -> Any:
        from x402.http import decode_payment_signature_header, encode_payment_required_header
        from x402.schemas import PaymentRequired

        assert self._payer is not None
        try:
            required = encode_payment_required_header(PaymentRequired.model_validate(offer))
            signature = self._payer.result().pay(required)
        except (AttestError, ValueError) as exc:
            return _error(message.get("id"), f"attest mcp could not pay the offer: {exc}")
        payment = decode_payment_signature_header(signature).model_dump(
            mode="json", by_alias=True, exclude_none=True
        )
        params = dict(message["params"])
        params["_meta"] = {**(params.get("_meta") or {}), PAYMENT_KEY: payment}
        again = {**message, "params": params}
        return self._post(json.dumps(again).encode(), again)

    def handle(self, raw: bytes) -> Any:
        """Forward one message; pay and resend a tool call the remote answered with an offer."""
        try:
            message = json.loads(raw)
        except ValueError:
            message = None  # the remote says what is wrong with it (-32700)
        answer = self._post(raw, message)
        if not isinstance(message, dict) or not isinstance(answer, dict):
            return answer
        result = answer.get("result")
        if message.get("method") == "initialize" and isinstance(result, dict):
            self.negotiated = result.get("protocolVersion")
        params = message.get("params")
        unpaid = isinstance(params, dict) and PAYMENT_KEY not in (params.get("_meta") or {})
        offer = offer_in(result)
        if self._payer is not None and message.get("method") == "tools/call" and unpaid and offer:
            return self._paid(message, offer)
        return answer


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _report_bad_key(made: Future[Payer]) -> None:
    if made.exception() is not None:
        print(f"attest mcp: ATTEST_PAYER_KEY cannot pay: {made.exception()}", file=sys.stderr)


def _error(message_id: Any, text: str) -> dict[str, Any]:
    error = {"code": _INTERNAL_ERROR, "message": text}
    return {"jsonrpc": "2.0", "id": message_id, "error": error}


def serve(forwarder: Forwarder, stdin: IO[bytes], stdout: IO[bytes], *, workers: int = 8) -> None:
    """Answer each line of stdin on stdout until stdin closes; calls run side by side (an
    MCP client may send the next request before the last is answered)."""
    lock = threading.Lock()

    def one(raw: bytes) -> None:
        answer = forwarder.handle(raw)
        if answer is None:
            return
        line = json.dumps(answer).encode() + b"\n"  # ASCII: a lone surrogate cannot break it
        with lock:
            stdout.write(line)
            stdout.flush()

    with ThreadPoolExecutor(max_workers=workers) as pool:
        for raw in iter(stdin.readline, b""):
            if raw.strip():
                pool.submit(one, raw)


def run(url: str, *, credential: str | None, payer_key: str | None) -> int:
    forwarder = Forwarder(url, credential=credential, payer_key=payer_key)
    serve(forwarder, sys.stdin.buffer, sys.stdout.buffer)
    return 0
