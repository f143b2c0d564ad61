"""/mcp never answers 500: malformed JSON-RPC gets a JSON-RPC error with the status the
streamable HTTP transport gives it, and arguments no route could read are tool errors
carrying the REST error object; a refusal's Retry-After reaches the tool error as
details.retry_after. All through a real server on loopback."""

from __future__ import annotations

import json

import httpx
import pytest
from django.test import RequestFactory

from tests.live_service import gunicorn
from wiring.mcp.tools import BY_NAME
from wiring.mcp.views import route_request

pytestmark = pytest.mark.timeout(600)

CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}


def post(service, body: bytes | object, **headers: str) -> httpx.Response:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx.post(
        service.url + "/mcp",
        content=content,
        headers={"Content-Type": "application/json", **headers},
        timeout=30,
    )


MALFORMED = [
    # (body, JSON-RPC code, the id the error answers)
    (b"{not json", -32700, None),
    (b'{"jsonrpc": "2.0", "id": 1, "method": "ping"\xff}', -32700, None),  # not UTF-8
    (b"\xff\xfe\x00", -32700, None),
    (b"[]", -32600, None),  # an empty array
    (b'[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]', -32600, None),  # a batch
    (b'"tools/list"', -32600, None),  # a bare string
    (b"42", -32600, None),  # a bare number
    (b"null", -32600, None),
    (b'{"jsonrpc": "1.0", "id": 1, "method": "ping"}', -32600, 1),
    (b'{"id": 1, "method": "ping"}', -32600, 1),
    (b'{"jsonrpc": "2.0", "id": null, "method": "ping"}', -32600, None),
    (b'{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}', -32600, None),
    (b'{"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}', -32600, None),
    (b'{"jsonrpc": "2.0", "id": true, "method": "ping"}', -32600, None),
    (b'{"jsonrpc": "2.0", "id": 1, "method": ["tools/list"]}', -32600, 1),
    (b'{"jsonrpc": "2.0", "id": 1}', -32600, 1),  # no method
    (b'{"jsonrpc": "2.0", "id": 1, "result": {}}', -32600, 1),  # a response
]


@pytest.mark.parametrize(("body", "code", "message_id"), MALFORMED)
def test_a_malformed_message_is_a_jsonrpc_error_with_a_400(service, body, code, message_id):
    answer = post(service, body)
    assert answer.status_code == 400
    assert answer.headers["Content-Type"] == "application/json"
    error = answer.json()
    assert error["jsonrpc"] == "2.0" and error["id"] == message_id
    assert error["error"]["code"] == code and error["error"]["message"]


def test_handshake_era_errors_about_a_readable_request_are_answers(service):
    """A handshake-era request's error is its answer (200), naming the id it answers;
    params that are not an object make the message unreadable in either era (400)."""
    unknown = post(service, {"jsonrpc": "2.0", "id": "a", "method": "nope"})
    params = post(service, {"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": [1]})
    assert (unknown.status_code, unknown.json()["error"]["code"], unknown.json()["id"]) == (
        200,
        -32601,
        "a",
    )
    assert (params.status_code, params.json()["error"]["code"], params.json()["id"]) == (
        400,
        -32602,
        7,
    )
    notification = post(service, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert notification.status_code == 202 and notification.content == b""


def test_get_is_405_with_allow_and_a_json_error(service):
    answer = httpx.get(service.url + "/mcp", timeout=30)
    assert answer.status_code == 405
    assert answer.headers["Allow"] == "POST"
    assert answer.json()["error"]["code"] == -32600


def _tool_error(answer: httpx.Response) -> dict:
    assert answer.status_code == 200, answer.text
    result = answer.json()["result"]
    assert result["isError"] is True
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
    return result["structuredContent"]["error"]


def test_text_that_is_not_unicode_is_a_tool_error(service):
    """A lone surrogate (valid JSON, not valid Unicode) in a query argument, a body
    argument or a path argument: the REST error object, naming the argument."""
    bearer = {"Authorization": f"Bearer {service.credential}"}
    calls = [
        ('"list_facts", "arguments": {"status": "\\udfff"}', "status"),
        ('"recall_facts", "arguments": {"subject": "a\\ud800b"}', "subject"),
        ('"retract_fact", "arguments": {"fact_id": "\\udfff", "reason": "x"}', "fact_id"),
        ('"check_receipt", "arguments": {"receipt": ["\\udfff"]}', "receipt[0]"),
    ]
    for call, field in calls:
        body = (
            f'{{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {{"name": {call}}}}}'
        )
        error = _tool_error(post(service, body.encode(), **bearer))
        assert (error["code"], error["details"]["field"]) == ("invalid_request", field), call


@pytest.mark.parametrize("fact_id", ["\N{GRINNING FACE}", "a/b", "../../v1/recall", "%2F"])
def test_any_fact_id_reaches_the_route_and_gets_its_error(service, fact_id):
    """An emoji or a slash in a path argument is the route's own not_found, never a bare
    404 or a crash: the argument is handed to the view, not parsed back from a path."""
    arguments = {"fact_id": fact_id, "reason": "Wrong."}
    body = {**CALL, "params": {"name": "retract_fact", "arguments": arguments}}
    error = _tool_error(post(service, body, Authorization=f"Bearer {service.credential}"))
    assert error["code"] == "not_found"


def test_a_missing_path_argument_is_a_tool_error_naming_it(service):
    body = {**CALL, "params": {"name": "retract_fact", "arguments": {"reason": "x"}}}
    error = _tool_error(post(service, body, Authorization=f"Bearer {service.credential}"))
    assert (error["code"], error["details"]["field"]) == ("invalid_request", "fact_id")


def test_a_refusal_with_retry_after_carries_it_in_the_tool_error(service):
    """Over the unpaid-request limit, REST answers 429 with Retry-After; the tool error
    carries the same seconds as details.retry_after."""
    env = {**service.env, "ATTEST_UNPAID_RATE": "2/m"}
    body = {**CALL, "params": {"name": "check_receipt", "arguments": {"receipt": "a.b"}}}
    with gunicorn(env, threads=2) as url:
        answers = [
            httpx.post(url + "/mcp", json=body, timeout=30).json()["result"] for _ in range(4)
        ]
        rest = httpx.post(url + "/v1/receipt/verify", json={"receipt": "a.b"}, timeout=30)
    assert rest.status_code == 429 and "retry_after" not in rest.json()["error"]["details"]
    limited = [result["structuredContent"]["error"] for result in answers if result["isError"]]
    assert limited, answers
    error = limited[-1]
    assert error["code"] == "rate_limited"
    assert 0 < error["details"]["retry_after"] <= 60
    assert error["details"]["reason"] == "unpaid_requests"  # the REST details are kept
    assert json.loads(answers[-1]["content"][0]["text"]) == answers[-1]["structuredContent"]


def test_the_trace_context_in_meta_becomes_the_inner_requests_headers():
    """The hook the service's tracing reads: traceparent/tracestate/baggage from _meta
    are the inner request's W3C headers (a value that could not be a header is dropped);
    the caller's Authorization goes along, the MCP request's payment header does not."""
    outer = RequestFactory().post(
        "/mcp",
        data="{}",
        content_type="application/json",
        headers={"Authorization": "Bearer c", "Payment-Signature": "x", "traceparent": "old"},
    )
    parent = "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01"
    meta = {"traceparent": parent, "tracestate": "a=1", "baggage": "line\nbreak"}
    inner, kwargs = route_request(outer, BY_NAME["check_receipt"], {"receipt": "x"}, meta)
    assert inner.headers["traceparent"] == parent
    assert inner.headers["tracestate"] == "a=1"
    assert "baggage" not in inner.headers
    assert inner.headers["Authorization"] == "Bearer c"
    assert "Payment-Signature" not in inner.headers
    assert kwargs == {}
    untraced, _ = route_request(outer, BY_NAME["check_receipt"], {"receipt": "x"}, {})
    assert untraced.headers["traceparent"] == "old"  # no _meta context: the HTTP one stays
