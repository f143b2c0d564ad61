"""OpenTelemetry through a real gunicorn exporting OTLP to a collector on loopback: one paid
verify call is one trace, continuing the caller's traceparent, with the request, the page
fetch, the database calls and the settlement (a span of its own around the facilitator's
/settle call) as spans; its log lines carry the IDs."""

from __future__ import annotations

import json
import secrets

import httpx
import pytest
from django.conf import settings
from x402.http import decode_payment_required_header

from attest.tracing import tracing_requested
from tests.billing.conftest import NETWORK, PAY_TO, Payer
from tests.billing.facilitator_server import FacilitatorServer
from tests.billing.gunicorn_server import _suite_shared
from tests.live_service import (
    free_port,
    gunicorn_command,
    migrate,
    server_env,
    serving,
    shared_database,
)
from tests.ops.otlp_collector import OtlpCollector

pytestmark = [pytest.mark.django_db(transaction=True)]

QUOTE = "64 percent of beach samples met the bathing standard"


@pytest.fixture
def traced_service(tmp_path, django_db_blocker):
    port = free_port()
    db_url, needs_migrate = shared_database(tmp_path)
    with FacilitatorServer(NETWORK) as facilitator, OtlpCollector() as collector:
        env = server_env(
            **_suite_shared(),  # on PostgreSQL every host shares the secret key
            DATABASE_URL=db_url,
            ATTEST_VAR_DIR=str(tmp_path),
            ATTEST_SIGNING_KEYS=settings.ATTEST_SIGNING_KEYS,
            ATTEST_PUBLIC_URL=f"http://127.0.0.1:{port}",
            ATTEST_FETCH_ALLOW=f"127.0.0.1:{port}",
            ATTEST_TRIAL_CALLS_PER_DAY="0",
            X402_FACILITATOR_URL=facilitator.url,
            X402_NETWORK=NETWORK,
            X402_PAY_TO=PAY_TO,
            LOG_LEVEL="INFO",
            OTEL_SERVICE_NAME="attest-test",
            OTEL_EXPORTER_OTLP_ENDPOINT=collector.url,
            OTEL_BSP_SCHEDULE_DELAY="100",
        )
        if needs_migrate:
            with django_db_blocker.unblock():
                migrate(env)
        log = tmp_path / "gunicorn.log"
        command = gunicorn_command(port, workers=2, threads=1, extra=["--preload"])
        with serving(command, port=port, env=env, log=log) as base:
            yield base, collector, log


def test_a_paid_call_is_one_trace_continuing_the_callers(traced_service):
    base, collector, log = traced_service
    body = {"url": f"{base}/v1/sample/page", "quote": QUOTE}
    offer = httpx.post(f"{base}/v1/verify/quote", json=body, timeout=60)
    assert offer.status_code == 402
    payment = Payer().pay(decode_payment_required_header(offer.headers["PAYMENT-REQUIRED"]))
    trace_id, caller_span = secrets.token_hex(16), secrets.token_hex(8)
    paid = httpx.post(
        f"{base}/v1/verify/quote",
        json=body,
        headers={"PAYMENT-SIGNATURE": payment, "traceparent": f"00-{trace_id}-{caller_span}-01"},
        timeout=60,
    )
    assert paid.status_code == 200, paid.text

    def complete(spans) -> bool:
        # Spans leave in batches as they end: the settlement's client span can be exported
        # before the spans that enclose it (the settlement's own, the request's), so wait
        # for all three.
        settled = any(s.kind == "client" and "/settle" in str(s.attributes) for s in spans)
        settlement = any(s.name == "billing.settle" for s in spans)
        answered = any(s.kind == "server" and s.parent_span_id == caller_span for s in spans)
        return settled and settlement and answered

    spans = collector.trace(trace_id, until=complete)
    servers = [s for s in spans if s.kind == "server" and s.parent_span_id == caller_span]
    assert len(servers) == 1, spans  # the call, continuing the caller's span
    request = servers[0]
    assert "verify/quote" in request.name
    clients = [s for s in spans if s.kind == "client"]
    urls = [str(s.attributes.get("url.full") or s.attributes.get("http.url")) for s in clients]
    assert any(u.endswith("/v1/sample/page") for u in urls), urls  # the cited page's fetch
    assert any(u.endswith("/verify") for u in urls), urls  # the facilitator's verify
    assert any(u.endswith("/settle") for u in urls), urls  # and its settlement
    # The settlement is a span of its own in the request, enclosing the facilitator's call.
    settlements = [s for s in spans if s.name == "billing.settle"]
    assert len(settlements) == 1, [s.name for s in spans]
    settlement = settlements[0]
    assert settlement.kind == "internal"
    assert settlement.parent_span_id == request.span_id
    assert settlement.attributes.get("attest.route") == "verify/quote"
    settle_call = next(s for s, u in zip(clients, urls, strict=True) if u.endswith("/settle"))
    assert settle_call.parent_span_id == settlement.span_id
    database = [s for s in spans if "db.system" in s.attributes or "db.system.name" in s.attributes]
    assert len(database) >= 3, [s.name for s in spans]
    assert {s.trace_id for s in spans} == {trace_id}
    # Everything hangs off the caller's span: no span's parent is outside the trace.
    known = {s.span_id for s in spans} | {caller_span}
    assert all(s.parent_span_id in known for s in spans)

    # The call's log lines (billing.settled at INFO) carry its trace ID.
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    assert any(
        line.get("trace_id") == trace_id and line.get("span_id") not in (None, "-")
        for line in lines
    ), lines[-5:]


def test_an_mcp_tool_call_continues_the_trace_its_meta_names(traced_service):
    base, collector, _log = traced_service
    trace_id, caller_span = secrets.token_hex(16), secrets.token_hex(8)
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "check_receipt",
            "arguments": {"receipt": "not.a.receipt"},
            "_meta": {"traceparent": f"00-{trace_id}-{caller_span}-01"},
        },
    }
    answered = httpx.post(f"{base}/mcp", json=message, timeout=60)
    assert answered.status_code == 200, answered.text

    def tool_span(spans) -> bool:
        return any(s.name == "tools/call check_receipt" for s in spans)

    spans = collector.trace(trace_id, until=tool_span)
    tools = [s for s in spans if s.name == "tools/call check_receipt"]
    assert len(tools) == 1, [s.name for s in spans]
    assert tools[0].parent_span_id == caller_span  # the caller's span, named in _meta
    assert {s.trace_id for s in spans} == {trace_id}


@pytest.mark.parametrize(
    ("environ", "on"),
    [
        ({}, False),
        ({"OTEL_SERVICE_NAME": "attest"}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, True),
        ({"OTEL_TRACES_EXPORTER": "console"}, True),
        ({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4318"}, False),
        ({"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4318"}, False),
    ],
)
def test_tracing_is_on_only_when_the_standard_variables_ask(environ, on):
    assert tracing_requested(environ) is on
