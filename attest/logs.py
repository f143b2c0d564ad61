"""Request-scoped logging context: every log line carries the request IDs."""

from __future__ import annotations

import logging
from contextvars import ContextVar

from attest.tracing import current_trace_ids

# The ID the server made for this request: what it logs, records and signs.
request_id_var: ContextVar[str] = ContextVar("request_id", default="-")
# The caller's own X-Request-ID, if it sent a usable one: kept beside ours, never instead.
client_request_id_var: ContextVar[str | None] = ContextVar("client_request_id", default=None)


def current_request_id() -> str:
    """The ID RequestIDMiddleware gave the request being served ("-" outside one)."""
    return request_id_var.get()


class RequestIDFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        request_id, client_request_id = request_id_var.get(), client_request_id_var.get()
        # Django logs each 4xx/5xx answer after the middleware returned (the context is
        # reset by then) and passes the request along: its IDs are on it.
        request = getattr(record, "request", None)
        late_id = getattr(request, "request_id", None)
        if request_id == "-" and late_id:
            request_id = late_id
            client_request_id = getattr(request, "client_request_id", None)
        # As logging.makeRecord stores a call's `extra`: straight into the record's dict.
        trace_id, span_id = current_trace_ids()
        record.__dict__.update(
            request_id=request_id,
            client_request_id=client_request_id or "-",
            trace_id=trace_id,
            span_id=span_id,
        )
        return True
