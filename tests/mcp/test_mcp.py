"""POST /mcp through the official MCP SDK's client, and x402's MCP client paying over it.

Every tool is listed and called; its structured content is the REST route's answer field
for field and its text the same JSON; an offer is x402's payment-required tool error; a
paid call gets tier "paid" and the settlement in _meta; a refused call is not charged; the
same payment on the same arguments gets the stored answer with no second charge. The same
tools over stdio through `attest mcp`.
"""

from __future__ import annotations

import json
import os
import sys
from contextlib import asynccontextmanager

import anyio
import httpx
import pytest
from eth_account import Account
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import McpError
from x402 import x402Client
from x402.extensions.payment_identifier import (
    append_payment_identifier_to_extensions,
    generate_payment_id,
)
from x402.mcp import MCP_PAYMENT_META_KEY, MCP_PAYMENT_RESPONSE_META_KEY, x402MCPSession
from x402.mcp.client import _extract_payment_required_from_object
from x402.mechanisms.evm.exact import ExactEvmClientScheme

from tests.clients.conftest import QUOTE
from tests.verification.conftest import redirect
from wiring.mcp.tools import BY_NAME, TOOLS
from wiring.mcp.views import price_sentence

pytestmark = pytest.mark.timeout(600)

FREE_TOOLS = {"verify_quote", "verify_quotes", "verify_citations", "fetch_page", "check_receipt"}
LEDGER_TOOLS = {
    "ingest_messages",
    "recall_facts",
    "resolve_fact",
    "record_fact",
    "retract_fact",
    "list_facts",
    "list_changes",
    "list_subjects",
}


@asynccontextmanager
async def session(url: str, credential: str | None = None):
    headers = {"Authorization": f"Bearer {credential}"} if credential else None
    async with (
        create_mcp_http_client(headers=headers) as http,
        streamable_http_client(url + "/mcp", http_client=http) as (read, write, _),
        ClientSession(read, write) as mcp,
    ):
        await mcp.initialize()
        yield mcp


def payer(key: str) -> x402Client:
    client = x402Client()
    client.register("eip155:*", ExactEvmClientScheme(Account.from_key(key)))
    return client


def answer(result) -> dict:
    """A tool result's structured content, checked to be the same JSON as its text."""
    assert result.structuredContent is not None
    assert json.loads(result.content[0].text) == result.structuredContent
    return result.structuredContent


def run(test):
    return anyio.run(test)


def test_tools_are_listed_with_their_routes_schemas(service):
    async def test():
        async with session(service.url) as mcp:
            tools = {tool.name: tool for tool in (await mcp.list_tools()).tools}
        async with session(service.url, service.credential) as mcp:
            with_credential = (await mcp.list_tools()).tools
        return tools, with_credential

    tools, with_credential = run(test)
    assert set(tools) == FREE_TOOLS  # the ledger's tools are absent without a credential
    assert [tool.name for tool in with_credential] == [tool.name for tool in TOOLS]  # in order
    hints = {tool.name: tool.annotations for tool in with_credential}
    assert [name for name, hint in hints.items() if hint.destructiveHint] == ["retract_fact"]
    assert {name for name, hint in hints.items() if hint.openWorldHint} == FREE_TOOLS - {
        "check_receipt"
    }
    assert {name for name, hint in hints.items() if hint.readOnlyHint} == {
        "check_receipt",
        "recall_facts",
        "resolve_fact",
        "list_facts",
        "list_changes",
        "list_subjects",
    }
    assert all(tool.title and tool.outputSchema for tool in with_credential)
    schema = tools["verify_quote"].inputSchema
    assert {"url", "quote"} <= set(schema["required"])
    assert schema["properties"]["threshold"]["maximum"] == 1.0  # the serializer's bound
    assert "$ref" not in json.dumps(schema)  # self-contained
    assert "content_kind" in tools["verify_quote"].description


def test_a_free_tool_answers_as_its_route(service):
    async def test():
        async with session(service.url) as mcp:
            return await mcp.call_tool("check_receipt", {"receipt": "not.a.jws"})

    result = run(test)
    assert result.isError is False
    rest = httpx.post(service.url + "/v1/receipt/verify", json={"receipt": "not.a.jws"})
    assert answer(result) == rest.json()  # field for field


def test_a_refusal_is_a_tool_error_carrying_the_api_error_object(service):
    async def test():
        async with session(service.url) as mcp:
            return await mcp.call_tool("check_receipt", {"receipt": 7})

    result = run(test)
    assert result.isError is True
    rest = httpx.post(service.url + "/v1/receipt/verify", json={"receipt": 7})
    assert rest.status_code == 400
    assert answer(result) == rest.json() and result.structuredContent["error"]["code"]


def test_a_ledger_tool_is_unknown_without_a_credential(service):
    async def test():
        async with session(service.url) as mcp:
            with pytest.raises(McpError) as unknown:
                await mcp.call_tool("recall_facts", {"subject": "u"})
            return unknown.value

    error = run(test)
    assert error.error.code == -32602 and "Unknown tool" in error.error.message


def test_an_unpaid_priced_call_is_x402s_payment_required_tool_error(service):
    async def test():
        async with session(service.url) as mcp:
            return await mcp.call_tool("verify_quote", {"url": service.article, "quote": QUOTE})

    result = run(test)
    assert result.isError is True
    offer = _extract_payment_required_from_object(result.structuredContent)
    assert offer is not None and offer.accepts  # what x402's MCP client reads
    assert result.content[1].text == price_sentence(BY_NAME["verify_quote"])
    assert "$0.01" in result.content[1].text and "POST /v1/credits" in result.content[1].text
    api_error = json.loads(result.content[2].text)["error"]
    assert (api_error["code"], api_error["details"]["reason"]) == (
        "payment_required",
        "payment_required",  # the service's trial is off: no trial was on offer
    )


def test_x402s_mcp_client_pays_every_priced_tool(service, payer_key):
    async def test():
        async with session(service.url) as mcp:
            paying = x402MCPSession(mcp, payer(payer_key))
            return {
                "verify_quote": await paying.call_tool(
                    "verify_quote", {"url": service.article, "quote": QUOTE, "match": "exact"}
                ),
                "verify_quotes": await paying.call_tool(
                    "verify_quotes", {"url": service.article, "quotes": [QUOTE, "not there"]}
                ),
                "verify_citations": await paying.call_tool(
                    "verify_citations", {"citations": [{"url": service.article, "quote": QUOTE}]}
                ),
                "fetch_page": await paying.call_tool("fetch_page", {"url": service.article}),
            }

    landed = service.facilitator.landed
    results = run(test)
    assert service.facilitator.landed == landed + 4
    for name, result in results.items():
        assert result.payment_made and not result.is_error, (name, result.content)
        assert result.payment_response is not None and result.payment_response.success
        body = answer(result.raw_result)
        assert (body["tier"], body["rail"]) == ("paid", "x402"), name
    assert results["verify_quote"].raw_result.structuredContent["result"]["match"] == "exact"
    assert [
        r["match"] for r in results["verify_quotes"].raw_result.structuredContent["results"]
    ] == [
        "exact",
        "none",
    ]
    assert QUOTE in results["fetch_page"].raw_result.structuredContent["text"]


def test_a_refused_call_is_not_charged(service, payer_key):
    """Refused before payment (robots), and after it (a redirect into a disallowed path):
    neither is charged, the second's payment is released."""
    service.pages.routes["/moved"] = redirect(service.pages.url("/private/page"))

    async def test():
        async with session(service.url) as mcp:
            paying = x402MCPSession(mcp, payer(payer_key))
            before = await paying.call_tool(
                "verify_quote", {"url": service.pages.url("/private/page"), "quote": QUOTE}
            )
            after = await paying.call_tool(
                "verify_quote", {"url": service.pages.url("/moved"), "quote": QUOTE}
            )
            return before, after

    landed = service.facilitator.landed
    before, after = run(test)
    assert before.is_error and not before.payment_made  # refused before any offer
    assert answer(before.raw_result)["error"]["code"] == "robots_disallowed"
    assert after.is_error and after.payment_made  # paid, then refused at the redirect
    assert answer(after.raw_result)["error"]["code"] == "robots_disallowed"
    assert after.payment_response is None
    assert service.facilitator.landed == landed


def test_the_same_payment_on_the_same_arguments_gets_the_stored_answer(service, payer_key):
    arguments = {"url": service.article, "quote": QUOTE}

    async def test():
        async with session(service.url) as mcp:
            offer = await mcp.call_tool("verify_quote", arguments)
            required = _extract_payment_required_from_object(offer.structuredContent)
            payment = await payer(payer_key).create_payment_payload(required)
            meta = {MCP_PAYMENT_META_KEY: payment.model_dump(mode="json", by_alias=True)}
            first = await mcp.call_tool("verify_quote", arguments, meta=meta)
            again = await mcp.call_tool("verify_quote", arguments, meta=meta)
            other = await mcp.call_tool("verify_quote", {**arguments, "match": "exact"}, meta=meta)
            return first, again, other

    landed = service.facilitator.landed
    first, again, other = run(test)
    assert service.facilitator.landed == landed + 1  # charged once
    assert first.isError is False and answer(first)["tier"] == "paid"
    assert again.content[0].text == first.content[0].text  # the stored bytes
    assert again.meta[MCP_PAYMENT_RESPONSE_META_KEY]["success"] is True
    assert other.isError is True  # the same payment on other arguments: already used
    assert json.loads(other.content[2].text)["error"]["details"]["reason"] == (
        "payment_already_used"
    )


def test_a_payment_identifier_gets_the_stored_answer_for_a_new_payment(service, payer_key):
    """x402's payment-identifier over MCP: two payments under one key are charged once."""
    arguments = {"url": service.article, "quote": QUOTE}
    payment_id = generate_payment_id()

    async def pay(mcp, tool_arguments):
        offer = await mcp.call_tool("verify_quote", tool_arguments)
        required = _extract_payment_required_from_object(offer.structuredContent)
        extensions = dict(required.extensions or {})
        append_payment_identifier_to_extensions(extensions, payment_id)
        payment = await payer(payer_key).create_payment_payload(required, extensions=extensions)
        meta = {MCP_PAYMENT_META_KEY: payment.model_dump(mode="json", by_alias=True)}
        return await mcp.call_tool("verify_quote", tool_arguments, meta=meta)

    async def test():
        async with session(service.url) as mcp:
            first = await pay(mcp, arguments)
            again = await pay(mcp, arguments)
            other = await pay(mcp, {**arguments, "match": "exact"})
            return first, again, other

    landed = service.facilitator.landed
    first, again, other = run(test)
    assert service.facilitator.landed == landed + 1  # charged once
    assert first.isError is False and answer(first)["tier"] == "paid"
    assert again.isError is False
    assert again.content[0].text == first.content[0].text  # the stored bytes
    assert other.isError is True
    assert answer(other)["error"]["code"] == "payment_identifier_conflict"


def test_the_ledger_tools(service):
    message = {
        "id": "m1",
        "role": "user",
        "text": "I moved to Dublin in March.",
        "occurred_at": "2026-03-04T10:11:58Z",
    }

    async def test():
        async with session(service.url, service.credential) as mcp:
            out = {}
            out["ingest_messages"] = await mcp.call_tool(
                "ingest_messages", {"subject": "mcp-u", "messages": [message]}
            )
            fact_id = out["ingest_messages"].structuredContent["facts"][0]["id"]
            out["recall_facts"] = await mcp.call_tool("recall_facts", {"subject": "mcp-u"})
            out["resolve_fact"] = await mcp.call_tool("resolve_fact", {"id": fact_id})
            out["list_facts"] = await mcp.call_tool("list_facts", {"subject": "mcp-u", "limit": 5})
            out["list_changes"] = await mcp.call_tool("list_changes", {"subject": "mcp-u"})
            out["list_subjects"] = await mcp.call_tool("list_subjects", {"limit": 5})
            out["record_fact"] = await mcp.call_tool(
                "record_fact",
                {
                    "subject": "mcp-u",
                    "predicate": "lives_in",
                    "statement": "Lives in Cork since June.",
                    "value": "Cork",
                    "authored_by": "support:ana",
                },
            )
            recorded = out["record_fact"].structuredContent["id"]
            out["retract_fact"] = await mcp.call_tool(
                "retract_fact", {"fact_id": recorded, "reason": "Entered for the wrong person."}
            )
            out["retract_unknown"] = await mcp.call_tool(
                "retract_fact", {"fact_id": "no-such-fact", "reason": "x"}
            )
            out["recall_again"] = await mcp.call_tool("recall_facts", {"subject": "mcp-u"})
            return fact_id, out

    fact_id, out = run(test)
    for name in LEDGER_TOOLS:
        assert out[name].isError is False, (name, out[name].content)
        answer(out[name])
    assert fact_id in [f["id"] for f in out["recall_facts"].structuredContent["facts"]]
    assert out["resolve_fact"].structuredContent["evidence"][0]["source_message_id"] == "m1"
    assert fact_id in [f["id"] for f in out["list_facts"].structuredContent["facts"]]
    assert out["retract_fact"].structuredContent["status"] == "retracted"
    assert out["retract_unknown"].isError is True
    assert answer(out["retract_unknown"])["error"]["code"] == "not_found"
    rest = httpx.post(
        service.url + "/v1/recall",
        json={"subject": "mcp-u"},
        headers={"Authorization": f"Bearer {service.credential}"},
    )
    assert rest.json() == answer(out["recall_again"])  # field for field


def test_attest_mcp_serves_the_tools_over_stdio_and_pays(service, payer_key):
    env = {
        **os.environ,
        "ATTEST_URL": service.url,
        "ATTEST_CREDENTIAL": service.credential,
        "ATTEST_PAYER_KEY": payer_key,
    }
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "attest_client", "mcp"], env=env
    )

    async def test():
        async with stdio_client(server) as (read, write), ClientSession(read, write) as mcp:
            await mcp.initialize()
            tools = {tool.name for tool in (await mcp.list_tools()).tools}
            paid = await mcp.call_tool("verify_quote", {"url": service.article, "quote": QUOTE})
            free = await mcp.call_tool("check_receipt", {"receipt": "not.a.jws"})
            recall = await mcp.call_tool("recall_facts", {"subject": "nobody"})
            return tools, paid, free, recall

    landed = service.facilitator.landed
    tools, paid, free, recall = run(test)
    assert tools == FREE_TOOLS | LEDGER_TOOLS
    assert paid.isError is False and answer(paid)["tier"] == "paid"
    assert paid.meta[MCP_PAYMENT_RESPONSE_META_KEY]["success"] is True
    assert service.facilitator.landed == landed + 1
    assert answer(free)["valid"] is False
    assert answer(recall)["facts"] == []
