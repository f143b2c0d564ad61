"""Runs in .venv-mcp2 (mcp 2.x): the official 2.x client against a live Attest's /mcp.

Called by tests/mcp/test_modern_clients.py with the service's address in the environment;
prints one JSON object with what each client saw, for the test to check. Nothing is
asserted here: a client error is caught and reported as it came.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import anyio
from eth_account import Account
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from x402 import x402Client
from x402.mcp import MCP_PAYMENT_META_KEY
from x402.mechanisms.evm.exact import ExactEvmClientScheme
from x402.schemas import PaymentRequired

URL = os.environ["ATTEST_URL"].rstrip("/") + "/mcp"
CREDENTIAL = os.environ["ATTEST_CREDENTIAL"]
ARTICLE = os.environ["ARTICLE"]
QUOTE = os.environ["QUOTE"]


def _result(result: Any) -> dict[str, Any]:
    return {
        "is_error": result.is_error,
        "structured": result.structured_content,
        "texts": [block.text for block in result.content],
        "meta": result.meta,
    }


def _client(mode: str, credential: str | None = None) -> Client:
    headers = {"Authorization": f"Bearer {credential}"} if credential else None
    transport = streamable_http_client(URL, http_client=create_mcp_http_client(headers=headers))
    return Client(transport, mode=mode, cache=None)


def _priced_calls() -> dict[str, tuple[str, dict[str, Any]]]:
    return {
        "verify_quote": ("verify_quote", {"url": ARTICLE, "quote": QUOTE}),
        "verify_quotes": ("verify_quotes", {"url": ARTICLE, "quotes": [QUOTE, "not there"]}),
        "verify_citations": ("verify_citations", {"citations": [{"url": ARTICLE, "quote": QUOTE}]}),
        "fetch_page": ("fetch_page", {"url": ARTICLE}),
    }


async def _pay(client: Client, payer: x402Client, name: str, arguments: dict) -> dict[str, Any]:
    offer = await client.call_tool(name, arguments)
    required = PaymentRequired.model_validate(offer.structured_content)
    payment = await payer.create_payment_payload(required)
    meta = {MCP_PAYMENT_META_KEY: payment.model_dump(mode="json", by_alias=True)}
    paid = await client.call_tool(name, arguments, meta=meta)
    return {"offer": _result(offer), "paid": _result(paid)}


async def _ledger(client: Client) -> dict[str, Any]:
    message = {
        "id": "modern-1",
        "role": "user",
        "text": "I moved to Lisbon in May.",
        "occurred_at": "2026-05-04T10:11:58Z",
    }
    out = {
        "ingest_messages": await client.call_tool(
            "ingest_messages", {"subject": "m2", "messages": [message]}
        )
    }
    fact_id = out["ingest_messages"].structured_content["facts"][0]["id"]
    out["recall_facts"] = await client.call_tool("recall_facts", {"subject": "m2"})
    out["resolve_fact"] = await client.call_tool("resolve_fact", {"id": fact_id})
    out["list_facts"] = await client.call_tool("list_facts", {"subject": "m2", "limit": 5})
    out["list_changes"] = await client.call_tool("list_changes", {"subject": "m2"})
    out["list_subjects"] = await client.call_tool("list_subjects", {"limit": 5})
    out["record_fact"] = await client.call_tool(
        "record_fact",
        {
            "subject": "m2",
            "predicate": "lives_in",
            "statement": "Lives in Porto since June.",
            "value": "Porto",
            "authored_by": "support:ana",
        },
    )
    recorded = out["record_fact"].structured_content["id"]
    out["retract_fact"] = await client.call_tool(
        "retract_fact", {"fact_id": recorded, "reason": "Wrong person."}
    )
    return {name: _result(result) for name, result in out.items()}


async def modern(payer_key: str) -> dict[str, Any]:
    payer = x402Client()
    payer.register("eip155:*", ExactEvmClientScheme(Account.from_key(payer_key)))
    report: dict[str, Any] = {}
    async with _client("2026-07-28") as client:
        report["protocol_version"] = client.protocol_version
        listed = await client.list_tools()
        report["tools"] = [
            tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in listed.tools
        ]
        report["list"] = {
            "ttl_ms": listed.ttl_ms,
            "cache_scope": listed.cache_scope,
            "result_type": listed.result_type,
        }
        report["check_receipt"] = _result(
            await client.call_tool("check_receipt", {"receipt": "not.a.jws"})
        )
        report["paid"] = {
            key: await _pay(client, payer, *call) for key, call in _priced_calls().items()
        }
        try:
            await client.call_tool("recall_facts", {"subject": "m2"})
        except MCPError as error:
            report["ledger_without_credential"] = {"code": error.code, "message": error.message}
    async with _client("2026-07-28", CREDENTIAL) as client:
        report["tools_with_credential"] = [tool.name for tool in (await client.list_tools()).tools]
        name, arguments = _priced_calls()["verify_quote"]
        report["priced_with_credential"] = _result(await client.call_tool(name, arguments))
        report["ledger"] = await _ledger(client)
    # A host with a wallet-less project's credential and prepaid credit: every priced tool
    # is paid from the balance, with no payment in _meta.
    async with _client("2026-07-28", os.environ["CREDIT_CREDENTIAL"]) as client:
        report["credit_paid"] = {
            key: _result(await client.call_tool(*call)) for key, call in _priced_calls().items()
        }
    return report


async def auto() -> dict[str, Any]:
    async with _client("auto") as client:
        return {
            "protocol_version": client.protocol_version,
            "discovered": client.session.discover_result is not None,
            "initialized": client.session.initialize_result is not None,
            "tools": [tool.name for tool in (await client.list_tools()).tools],
            "check_receipt": _result(
                await client.call_tool("check_receipt", {"receipt": "not.a.jws"})
            ),
        }


async def stdio(payer_key: str) -> dict[str, Any]:
    """`attest mcp` (the service's venv) as a stdio server for the 2.x client, both modes."""
    env = {**os.environ, "ATTEST_PAYER_KEY": payer_key}
    server = StdioServerParameters(
        command=os.environ["ATTEST_PYTHON"], args=["-m", "attest_client", "mcp"], env=env
    )
    out: dict[str, Any] = {}
    for mode in ("2026-07-28", "auto"):
        async with Client(server, mode=mode, cache=None) as client:
            name, arguments = _priced_calls()["verify_quote"]
            out[mode] = {
                "protocol_version": client.protocol_version,
                "discovered": client.session.discover_result is not None,
                "tools": [tool.name for tool in (await client.list_tools()).tools],
                "paid": _result(await client.call_tool(name, arguments)),
                "recall": _result(await client.call_tool("recall_facts", {"subject": "nobody"})),
            }
    return out


async def main() -> None:
    report = {
        "modern": await modern(sys.argv[1]),
        "auto": await auto(),
        "stdio": await stdio(sys.argv[1]),
    }
    print(json.dumps(report))


if __name__ == "__main__":
    anyio.run(main)
