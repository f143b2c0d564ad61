"""Tracing off leaves the service as it was; on, an MCP tool call run in-process continues
the trace its `_meta.traceparent` (put on the inner request as a header) names."""

from __future__ import annotations

import json
import secrets

from tests.django_script import run_django_script

OFF = """
import os, sys
for name in [n for n in os.environ if n.startswith("OTEL_")]:
    del os.environ[name]
import attest.wsgi
from django.conf import settings
print(json.dumps({
    "sdk": "opentelemetry.sdk.trace" in sys.modules,
    "instrumented": any("opentelemetry" in m for m in settings.MIDDLEWARE),
}))
"""

CONTINUED = """
import os, sys
os.environ["OTEL_TRACES_EXPORTER"] = "console"
from attest.tracing import configure_tracing, continued_span, current_trace_ids
assert configure_tracing()
with continued_span("tools/call verify_quote", {"traceparent": sys.argv[1]}):
    print("IDS", *current_trace_ids())
from opentelemetry import trace
trace.get_tracer_provider().shutdown()
"""


def test_tracing_off_imports_no_sdk_and_adds_no_middleware():
    printed = run_django_script("import json\n" + OFF)
    assert json.loads(printed.strip().splitlines()[-1]) == {"sdk": False, "instrumented": False}


def test_an_in_process_tool_call_continues_the_callers_trace():
    trace_id, parent = secrets.token_hex(16), secrets.token_hex(8)
    printed = run_django_script(CONTINUED, f"00-{trace_id}-{parent}-01")
    ids_line = next(line for line in printed.splitlines() if line.startswith("IDS "))
    _, seen_trace, seen_span = ids_line.split()
    assert seen_trace == trace_id
    exported = json.JSONDecoder().raw_decode(printed[printed.index("{") :])[0]
    assert exported["name"] == "tools/call verify_quote"
    assert exported["context"]["trace_id"] == f"0x{trace_id}"
    assert exported["context"]["span_id"] == f"0x{seen_span}"
    assert exported["parent_id"] == f"0x{parent}"
    assert exported["kind"] == "SpanKind.SERVER"
