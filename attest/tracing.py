"""OpenTelemetry traces, configured by the standard ``OTEL_*`` variables and off without them.

On, the maintained instrumentations make the spans: Django (every request, continuing a W3C
``traceparent`` the caller sent), httpx (the facilitator's calls; cited pages' fetches go
through ``traced_transport``, their transport being our own) and psycopg or sqlite3 (every
database call). The SDK reads the rest of its configuration (``OTEL_SERVICE_NAME``,
``OTEL_EXPORTER_OTLP_*``, ``OTEL_BSP_*``, sampling) from the environment itself.

Off, nothing of the SDK is imported and no instrumentation is installed: the request path
is the same code as without this module but for one flag read.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, nullcontext
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # httpx is a request's import: a manage.py command never loads it
    import httpx

# Any of these asks for traces (the SDK's own names); OTEL_SDK_DISABLED=true overrides them.
_TURNED_ON_BY = (
    "OTEL_TRACES_EXPORTER",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
)

_enabled = False


def tracing_requested(environ: Mapping[str, str]) -> bool:
    """Whether the environment asks for traces: an exporter or endpoint named, not disabled."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporter = environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporter == "none":
        return False
    return any(environ.get(name, "").strip() for name in _TURNED_ON_BY)


def tracing_enabled() -> bool:
    return _enabled


def configure_tracing(environ: Mapping[str, str] = os.environ) -> bool:
    """Install the tracer provider and the instrumentations once, before Django loads its
    middleware (the Django instrumentation adds its own). Returns whether tracing is on."""
    global _enabled
    if _enabled or not tracing_requested(environ):
        return _enabled
    # Imported only when on: the SDK and the instrumentations cost start-up time.
    from opentelemetry import trace
    from opentelemetry.instrumentation.django import DjangoInstrumentor
    from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor
    from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor
    from opentelemetry.instrumentation.sqlite3 import SQLite3Instrumentor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

    provider = TracerProvider()  # resource and sampler from OTEL_SERVICE_NAME, OTEL_TRACES_*
    provider.add_span_processor(BatchSpanProcessor(_exporter(environ, ConsoleSpanExporter)))
    trace.set_tracer_provider(provider)
    DjangoInstrumentor().instrument()
    HTTPXClientInstrumentor().instrument()
    PsycopgInstrumentor().instrument(enable_commenter=False)
    SQLite3Instrumentor().instrument()
    _enabled = True
    return True


def _exporter(environ: Mapping[str, str], console: Any) -> Any:
    """OTLP over HTTP (the default of OTEL_TRACES_EXPORTER) or the console, as the SDK names
    them; any other name is a configuration error, said at start-up."""
    name = environ.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower() or "otlp"
    if name == "console":
        return console()
    if name != "otlp":
        from django.core.exceptions import ImproperlyConfigured

        raise ImproperlyConfigured(f"OTEL_TRACES_EXPORTER={name!r}: use otlp, console or none.")
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter()  # endpoint, headers and timeout from OTEL_EXPORTER_OTLP_*


def traced_transport(transport: httpx.BaseTransport) -> httpx.BaseTransport:
    """A client span around each request sent through ``transport`` (our own transports,
    which the httpx instrumentation does not patch); the transport itself when off."""
    if not _enabled:
        return transport
    from opentelemetry.instrumentation.httpx import SyncOpenTelemetryTransport

    return SyncOpenTelemetryTransport(transport)


def continued_span(name: str, carrier: Mapping[str, str]) -> Any:
    """A server span named ``name`` continuing the W3C trace context in ``carrier`` (headers,
    or an MCP ``_meta``), for work that did not arrive as its own HTTP request: an MCP tool
    call run in-process. A context manager; does nothing when tracing is off."""
    if not _enabled:
        return nullcontext()
    return _continued_span(name, carrier)


@contextmanager
def _continued_span(name: str, carrier: Mapping[str, str]) -> Iterator[None]:
    from opentelemetry import trace
    from opentelemetry.propagate import extract

    tracer = trace.get_tracer("attest")
    context = extract(dict(carrier)) if "traceparent" in carrier else None
    with tracer.start_as_current_span(name, context=context, kind=trace.SpanKind.SERVER):
        yield


def traced_step(name: str, attributes: Mapping[str, str] | None = None) -> Any:
    """An internal span named ``name`` around a step of our own that no instrumentation
    sees as one (the settlement: the facilitator's HTTP call, or the built-in facilitator's
    database rows, happen inside it). A context manager; does nothing when tracing is off."""
    if not _enabled:
        return nullcontext()
    from opentelemetry import trace

    return trace.get_tracer("attest").start_as_current_span(name, attributes=attributes)


def current_trace_ids() -> tuple[str, str]:
    """The current trace and span IDs as hex, or ("-", "-") outside a span or when off."""
    if not _enabled:
        return "-", "-"
    from opentelemetry import trace

    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return "-", "-"
    return trace.format_trace_id(context.trace_id), trace.format_span_id(context.span_id)
