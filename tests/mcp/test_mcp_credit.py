"""An MCP host configured with only `Authorization: Bearer <credential>` (no wallet) calls
every priced tool and is paid from the project's prepaid credit: over HTTP with the
official MCP client, and through `attest mcp` (stdio) with ATTEST_CREDENTIAL alone."""

from __future__ import annotations

import os
import sys

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from attest_client import Attest
from tests.clients.conftest import QUOTE
from tests.mcp.test_mcp import answer, run, session

pytestmark = pytest.mark.timeout(600)


def _bought(service, payer_key: str, amount: str) -> str:
    with Attest(service.url, payer_key=payer_key) as buyer:
        return buyer.buy_credits(amount)["credential"]


def _balance(service, credential: str) -> str:
    with Attest(service.url, credential=credential) as client:
        return client.credits()["balance"]


def test_a_bearer_credential_alone_pays_every_priced_tool_from_credit(service, payer_key):
    credential = _bought(service, payer_key, "1.00")

    async def test():
        async with session(service.url, credential) as mcp:
            return {
                "verify_quote": await mcp.call_tool(
                    "verify_quote", {"url": service.article, "quote": QUOTE, "match": "exact"}
                ),
                "verify_quotes": await mcp.call_tool(
                    "verify_quotes", {"url": service.article, "quotes": [QUOTE, "not there"]}
                ),
                "verify_citations": await mcp.call_tool(
                    "verify_citations", {"citations": [{"url": service.article, "quote": QUOTE}]}
                ),
                "fetch_page": await mcp.call_tool("fetch_page", {"url": service.article}),
            }

    landed = service.facilitator.landed
    results = run(test)
    for name, result in results.items():
        assert result.isError is False, (name, result.content)
        body = answer(result)
        assert (body["tier"], body["rail"]) == ("paid", "credit"), name
    assert service.facilitator.landed == landed  # nothing settled on-chain: credit paid
    assert _balance(service, credential) == "0.80"  # 1.00 - 0.01 - 0.08 - 0.10 - 0.01


def test_short_credit_is_the_payment_required_tool_error(service, payer_key):
    credential = _bought(service, payer_key, "0.10")

    async def test():
        async with session(service.url, credential) as mcp:
            first = await mcp.call_tool(
                "verify_citations", {"citations": [{"url": service.article, "quote": QUOTE}]}
            )
            second = await mcp.call_tool("verify_quote", {"url": service.article, "quote": QUOTE})
            return first, second

    first, second = run(test)
    assert answer(first)["rail"] == "credit"
    assert second.isError is True
    texts = " ".join(getattr(part, "text", "") for part in second.content)
    assert "insufficient_credit" in texts


def test_attest_mcp_pays_from_credit_with_only_the_credential(service, payer_key):
    credential = _bought(service, payer_key, "0.50")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATTEST_")}
    env.update(ATTEST_URL=service.url, ATTEST_CREDENTIAL=credential)
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "attest_client", "mcp"], env=env
    )

    async def test():
        async with stdio_client(server) as (read, write), ClientSession(read, write) as mcp:
            await mcp.initialize()
            return await mcp.call_tool("verify_quote", {"url": service.article, "quote": QUOTE})

    paid = run(test)
    assert paid.isError is False, paid.content
    assert (answer(paid)["tier"], answer(paid)["rail"]) == ("paid", "credit")
    assert _balance(service, credential) == "0.49"
