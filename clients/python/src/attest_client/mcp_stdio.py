"""``attest mcp``: Attest's MCP tools over stdio, forwarded to a remote Attest's ``/mcp``.

The tools, their schemas and their answers are the remote service's own (listed from it,
never copied here). With a payer key, a priced call that comes back as an x402 offer is
paid through the x402 SDK's MCP client and retried; without one, the offer goes back to
the local MCP client as it came, and a payment that client attaches in
``_meta["x402/payment"]`` is forwarded.
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from typing import Any

import anyio
from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared._httpx_utils import create_mcp_http_client
from x402.mcp import MCP_PAYMENT_META_KEY


def _payer(private_key: str) -> Any:
    from eth_account import Account
    from x402 import x402Client
    from x402.mechanisms.evm.exact import ExactEvmClientScheme

    try:
        account = Account.from_key(private_key)
    except (ValueError, TypeError) as exc:
        raise SystemExit(f"attest mcp: ATTEST_PAYER_KEY is not a hex private key: {exc}") from None

    client = x402Client()
    # Any EVM network the service offers: the payer signs for the chain the offer names.
    client.register("eip155:*", ExactEvmClientScheme(account))
    return client


def build_server(remote: ClientSession, payer: Any) -> Server:
    """A stdio-side MCP server whose tools are the remote session's."""
    from x402.mcp import x402MCPSession

    server: Server = Server("attest", instructions=None)
    paying = x402MCPSession(remote, payer) if payer is not None else None

    @server.list_tools()
    async def list_tools() -> list[types.Tool]:
        return (await remote.list_tools()).tools

    @server.call_tool(validate_input=False)  # the remote route validates, with its errors
    async def call_tool(name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        meta = server.request_context.meta
        payment = (meta.model_extra or {}).get(MCP_PAYMENT_META_KEY) if meta else None
        if payment is not None or paying is None:
            extra = {MCP_PAYMENT_META_KEY: payment} if payment is not None else None
            return await remote.call_tool(name, arguments, meta=extra)
        # The SDK types raw_result as Any; it is the remote's CallToolResult.
        result: types.CallToolResult = (await paying.call_tool(name, arguments)).raw_result
        return result

    return server


async def serve(url: str, *, credential: str | None, payer_key: str | None) -> None:
    """Serve stdio until the local client closes it, over one remote MCP session."""
    headers = {"Authorization": f"Bearer {credential}"} if credential else None
    payer = _payer(payer_key) if payer_key else None
    async with AsyncExitStack() as stack:
        http = await stack.enter_async_context(create_mcp_http_client(headers=headers))
        read, write, _ = await stack.enter_async_context(
            streamable_http_client(url.rstrip("/") + "/mcp", http_client=http)
        )
        remote = await stack.enter_async_context(ClientSession(read, write))
        await remote.initialize()
        server = build_server(remote, payer)
        local_read, local_write = await stack.enter_async_context(stdio_server())
        await server.run(local_read, local_write, server.create_initialization_options())


def run(url: str, *, credential: str | None, payer_key: str | None) -> int:
    anyio.run(lambda: serve(url, credential=credential, payer_key=payer_key))
    return 0
