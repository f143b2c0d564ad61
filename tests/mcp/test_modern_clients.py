"""MCP 2026-07-28 on /mcp: the official mcp 2.x client (from its own venv, .venv-mcp2, which
`make test` builds) in mode="2026-07-28" and in "auto" mode, and raw modern requests with
both x402 bindings, against the same real server the 1.x tests use."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import httpx
import pytest
from eth_account import Account
from x402 import x402Client
from x402.mcp import MCP_PAYMENT_META_KEY, MCP_PAYMENT_RESPONSE_META_KEY
from x402.mechanisms.evm.exact import ExactEvmClientScheme
from x402.schemas import PaymentRequired

from attest_client import Attest
from tests.clients.conftest import QUOTE
from tests.live_service import ROOT
from wiring.mcp.tools import TOOLS

pytestmark = pytest.mark.timeout(600)

MODERN_PYTHON = ROOT / ".venv-mcp2" / "bin" / "python"
VERSION = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": VERSION,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
}
PAYING_META = {
    **META,
    "io.modelcontextprotocol/clientCapabilities": {"extensions": {"org.x402/payment": {}}},
}
ORDER = [tool.name for tool in TOOLS]
FREE = [tool.name for tool in TOOLS if not tool.ledger]


@pytest.fixture(scope="module")
def report(service) -> dict:
    """What the 2.x client saw, driven once for the module (each run costs four payments)."""
    if not MODERN_PYTHON.exists():
        pytest.fail("The mcp 2.x client's venv is missing: `make test` builds .venv-mcp2.")
    env = {
        **os.environ,
        "ATTEST_URL": service.url,
        "ATTEST_CREDENTIAL": service.credential,
        "ARTICLE": service.article,
        "QUOTE": QUOTE,
        "ATTEST_PYTHON": sys.executable,
    }
    with Attest(service.url, payer_key=Account.create().key.hex()) as buyer:
        env["CREDIT_CREDENTIAL"] = buyer.buy_credits("1.00")["credential"]
    drive = Path(__file__).parent / "modern" / "drive.py"
    landed = service.facilitator.landed
    ran = subprocess.run(
        [str(MODERN_PYTHON), str(drive), Account.create().key.hex()],
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert ran.returncode == 0, ran.stderr[-4000:]
    out = json.loads(ran.stdout)
    out["charged"] = service.facilitator.landed - landed
    return out


def test_the_2x_client_in_2026_mode_lists_the_tools_in_a_fixed_order(report):
    modern = report["modern"]
    assert modern["protocol_version"] == VERSION
    assert [tool["name"] for tool in modern["tools"]] == FREE
    assert modern["tools_with_credential"] == ORDER
    assert modern["list"] == {
        "ttl_ms": 600_000,
        "cache_scope": "private",
        "result_type": "complete",
    }
    annotations = {tool["name"]: tool["annotations"] for tool in modern["tools"]}
    assert annotations["verify_quote"] == {
        "readOnlyHint": False,
        "destructiveHint": False,
        "idempotentHint": False,
        "openWorldHint": True,
    }
    assert annotations["check_receipt"]["readOnlyHint"] is True
    for tool in modern["tools"]:
        assert tool["title"] and tool["outputSchema"]["type"] == "object", tool["name"]


def _resolved(node, components):
    """An OpenAPI schema with its refs replaced, written apart from the server's own code."""
    if isinstance(node, list):
        return [_resolved(item, components) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        return _resolved(components[node["$ref"].rsplit("/", 1)[1]], components)
    return {key: _resolved(value, components) for key, value in node.items()}


def _json_schema(node):
    """OpenAPI 3.0's nullable and readOnly spelled as JSON Schema spells them."""
    if isinstance(node, list):
        return [_json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {k: _json_schema(v) for k, v in node.items() if k not in ("nullable", "readOnly")}
    if node.get("nullable"):
        if isinstance(out.get("type"), str):
            out["type"] = [out["type"], "null"]
        elif "type" not in out:
            out = {"anyOf": [out, {"type": "null"}]}
    return out


def test_every_tools_output_schema_is_its_routes_success_body(report, service):
    document = httpx.get(service.url + "/v1/openapi.json", timeout=30).json()
    components = document["components"]["schemas"]
    tools = {tool.name: tool for tool in TOOLS}
    listed = report["modern"]["tools"]
    assert len(listed) == len(FREE)
    for tool in listed:
        route = tools[tool["name"]]
        responses = document["paths"][route.path][route.method.lower()]["responses"]
        [success] = [r for status, r in responses.items() if status.startswith("2")]
        expected = _json_schema(
            _resolved(success["content"]["application/json"]["schema"], components)
        )
        assert tool["outputSchema"] == expected, tool["name"]


def test_a_free_tool_answers_as_its_route(report, service):
    result = report["modern"]["check_receipt"]
    rest = httpx.post(service.url + "/v1/receipt/verify", json={"receipt": "not.a.jws"}, timeout=30)
    assert result["is_error"] is False
    assert result["structured"] == rest.json() == json.loads(result["texts"][0])
    assert result["meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "attest"


def test_the_2x_client_pays_every_priced_tool_through_meta(report):
    paid = report["modern"]["paid"]
    assert set(paid) == {"verify_quote", "verify_quotes", "verify_citations", "fetch_page"}
    assert report["charged"] == 4 + 2  # and one call in each stdio mode below
    for name, calls in paid.items():
        offer, answer = calls["offer"], calls["paid"]
        # The 2.x client does not advertise org.x402/payment: the tool-result binding.
        assert offer["is_error"] is True and offer["structured"]["accepts"], name
        assert json.loads(offer["texts"][0]) == offer["structured"]
        assert answer["is_error"] is False, (name, answer["texts"])
        assert (answer["structured"]["tier"], answer["structured"]["rail"]) == ("paid", "x402")
        assert answer["meta"][MCP_PAYMENT_RESPONSE_META_KEY]["success"] is True


def test_the_2x_client_with_only_a_credential_pays_every_priced_tool_from_credit(report, service):
    paid = report["modern"]["credit_paid"]
    assert set(paid) == {"verify_quote", "verify_quotes", "verify_citations", "fetch_page"}
    for name, result in paid.items():
        assert result["is_error"] is False, (name, result["texts"])
        assert (result["structured"]["tier"], result["structured"]["rail"]) == ("paid", "credit")
        assert "receipt" in result["structured"], name


def test_the_ledger_tools_need_a_credential_and_answer_with_it(report):
    modern = report["modern"]
    assert modern["ledger_without_credential"]["code"] == -32602
    ledger = modern["ledger"]
    assert set(ledger) == {tool.name for tool in TOOLS if tool.ledger}
    for name, result in ledger.items():
        assert result["is_error"] is False, (name, result["texts"])
        assert json.loads(result["texts"][0]) == result["structured"]
    assert ledger["retract_fact"]["structured"]["status"] == "retracted"


def test_a_priced_tool_with_a_bearer_credential_goes_to_the_routes_payment(report):
    """With a credential and no payment the route's own admission decides (billing's
    pipeline); this project holds no credit, so the answer is the x402 offer."""
    result = report["modern"]["priced_with_credential"]
    assert result["is_error"] is True and result["structured"]["accepts"]


def test_auto_mode_picks_the_modern_era(report):
    auto = report["auto"]
    assert auto["protocol_version"] == VERSION
    assert (auto["discovered"], auto["initialized"]) == (True, False)
    assert auto["tools"] == FREE
    assert auto["check_receipt"]["is_error"] is False


def test_attest_mcp_over_stdio_serves_the_2x_client_in_both_modes_and_pays(report):
    """`attest mcp` forwards whatever the client speaks: a modern client's discover and
    _meta, the auto probe, each paid with ATTEST_PAYER_KEY."""
    for mode, seen in report["stdio"].items():
        assert (seen["protocol_version"], seen["discovered"]) == (VERSION, True), mode
        assert seen["tools"] == ORDER, mode  # ATTEST_CREDENTIAL adds the ledger's tools
        paid = seen["paid"]
        assert paid["is_error"] is False and paid["structured"]["tier"] == "paid", paid["texts"]
        assert paid["meta"][MCP_PAYMENT_RESPONSE_META_KEY]["success"] is True
        assert seen["recall"]["structured"]["facts"] == []


# ---- raw 2026-07-28 requests ------------------------------------------------------------


def rpc(service, method: str, params: dict, *, name: str | None = None, version: str = VERSION):
    headers = {"MCP-Protocol-Version": version, "Mcp-Method": method}
    if name is not None:
        headers["Mcp-Name"] = name
    body = {"jsonrpc": "2.0", "id": "r1", "method": method, "params": params}
    return httpx.post(service.url + "/mcp", json=body, headers=headers, timeout=120)


def test_discover_names_the_versions_the_capabilities_and_the_payment_extension(service):
    answer = rpc(service, "server/discover", {"_meta": META})
    result = answer.json()["result"]
    assert result["resultType"] == "complete"
    assert result["supportedVersions"] == ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"]
    assert result["capabilities"]["extensions"] == {"org.x402/payment": {}}
    assert (result["ttlMs"], result["cacheScope"]) == (3_600_000, "public")
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "attest"


def test_a_client_that_advertises_x402_gets_payment_required_and_pays_through_meta(
    service, payer_key
):
    arguments = {"url": service.article, "quote": QUOTE}
    params = {"name": "verify_quote", "arguments": arguments, "_meta": PAYING_META}
    offer = rpc(service, "tools/call", params, name="verify_quote").json()["result"]
    assert offer["resultType"] == "payment_required"
    assert "isError" not in offer and "content" not in offer
    required = PaymentRequired.model_validate(offer["paymentRequired"])
    payer = x402Client()
    payer.register("eip155:*", ExactEvmClientScheme(Account.from_key(payer_key)))
    payment = anyio.run(payer.create_payment_payload, required)
    paid_meta = {
        **PAYING_META,
        MCP_PAYMENT_META_KEY: payment.model_dump(mode="json", by_alias=True),
    }
    landed = service.facilitator.landed
    paid = rpc(service, "tools/call", {**params, "_meta": paid_meta}, name="verify_quote")
    result = paid.json()["result"]
    assert service.facilitator.landed == landed + 1
    assert result["resultType"] == "complete" and result["isError"] is False
    assert result["structuredContent"]["tier"] == "paid"
    assert result["_meta"][MCP_PAYMENT_RESPONSE_META_KEY]["success"] is True
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "attest"


def test_an_unknown_version_gets_32022_naming_the_supported_ones(service):
    meta = {**META, "io.modelcontextprotocol/protocolVersion": "2027-01-01"}
    answer = rpc(service, "tools/list", {"_meta": meta}, version="2027-01-01")
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["code"] == -32022
    assert error["data"] == {
        "supported": ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"],
        "requested": "2027-01-01",
    }


def test_the_mirrored_headers_are_checked(service):
    params = {"name": "check_receipt", "arguments": {"receipt": "x"}, "_meta": META}
    wrong_name = rpc(service, "tools/call", params, name="fetch_page")
    no_name = rpc(service, "tools/call", params)
    encoded = rpc(service, "tools/call", params, name="=?base64?Y2hlY2tfcmVjZWlwdA==?=")
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": META}}
    wrong_method = httpx.post(
        service.url + "/mcp",
        json=body,
        headers={"MCP-Protocol-Version": VERSION, "Mcp-Method": "tools/call"},
        timeout=30,
    )
    for answer in (wrong_name, no_name, wrong_method):
        assert (answer.status_code, answer.json()["error"]["code"]) == (400, -32020)
    assert encoded.json()["result"]["resultType"] == "complete"  # the base64 form decoded


def test_modern_refusals_carry_the_transports_statuses(service):
    missing = rpc(
        service, "tools/list", {"_meta": {"io.modelcontextprotocol/protocolVersion": VERSION}}
    )
    unknown = rpc(service, "ping", {"_meta": META})  # 2026-07-28 removed ping
    handshake = rpc(service, "initialize", {"_meta": META})
    assert (missing.status_code, missing.json()["error"]["code"]) == (400, -32602)
    assert (unknown.status_code, unknown.json()["error"]["code"]) == (404, -32601)
    assert (handshake.status_code, handshake.json()["error"]["code"]) == (404, -32601)
