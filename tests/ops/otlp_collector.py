"""An OTLP/HTTP trace collector on loopback: what an OpenTelemetry Collector receives at
/v1/traces (protobuf ExportTraceServiceRequest), kept as spans a test can read."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

SPAN_KINDS = {1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}


@dataclass(frozen=True)
class Span:
    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    kind: str
    attributes: dict


def _value(any_value) -> object:
    return (
        getattr(any_value, any_value.WhichOneof("value")) if any_value.WhichOneof("value") else None
    )


class OtlpCollector:
    def __init__(self) -> None:
        self.spans: list[Span] = []
        self._lock = threading.Lock()
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                request = ExportTraceServiceRequest.FromString(body)
                with collector._lock:
                    collector.spans.extend(
                        Span(
                            trace_id=span.trace_id.hex(),
                            span_id=span.span_id.hex(),
                            parent_span_id=span.parent_span_id.hex(),
                            name=span.name,
                            kind=SPAN_KINDS.get(span.kind, "unspecified"),
                            attributes={a.key: _value(a.value) for a in span.attributes},
                        )
                        for resource in request.resource_spans
                        for scope in resource.scope_spans
                        for span in scope.spans
                    )
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> OtlpCollector:
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.server.shutdown()
        self.server.server_close()

    def trace(self, trace_id: str, *, until, timeout: float = 30) -> list[Span]:
        """The spans of ``trace_id`` once ``until(spans)`` holds (or the time runs out)."""
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                spans = [s for s in self.spans if s.trace_id == trace_id]
            if until(spans) or time.monotonic() > deadline:
                return spans
            time.sleep(0.1)
