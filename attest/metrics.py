"""The service's Prometheus metrics, defined once for every app (docs/operations.md lists them).

Under gunicorn each worker writes its values to files in ``PROMETHEUS_MULTIPROC_DIR``
(prometheus-client's multiprocess mode, chosen by that variable when this module is first
imported) and ``GET /metrics`` reads them all, so one scrape sees the whole instance. Without
the variable (tests, ``manage.py``) the values live in the process that serves /metrics.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)

MULTIPROC_DIR_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"

# Buckets for work a person waits on: a ledger read is milliseconds, a verify call of a slow
# page tens of seconds (ATTEST_FETCH_DEADLINE is 20 s).
_SECONDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 60.0)

REQUESTS = Counter(
    "attest_http_requests",
    "HTTP requests answered, by URL pattern name (never the raw path), method and status.",
    ["route", "method", "status"],
)
REQUEST_SECONDS = Histogram(
    "attest_http_request_duration_seconds",
    "Time from the request reaching Django to its answer, by URL pattern name and method.",
    ["route", "method"],
    buckets=_SECONDS,
)

PRICED_CALLS = Counter(
    "attest_priced_calls",
    "Priced calls by result (charged or uncharged), the reason an uncharged one was not "
    "charged, tier (trial or paid) and rail (x402, credit; trial for trial calls).",
    ["route", "result", "reason", "tier", "rail"],
)
PAYMENTS_VERIFIED = Counter(
    "attest_payments_verified", "Payments the facilitator verified, by route.", ["route"]
)
PAYMENTS_SETTLED = Counter(
    "attest_payments_settled", "Payments settled (money moved to us), by route.", ["route"]
)
PAYMENTS_FAILED = Counter(
    "attest_payments_failed",
    "Payments refused or not settled, by stage (verify, settle) and reason.",
    ["stage", "reason"],
)
# Incremented by the credit rail (billing) each time a call draws on prepaid credit.
CREDIT_DRAWN_USD = Counter(
    "attest_credit_drawn_usd", "Prepaid credit drawn by charged calls, in US dollars."
)

QUEUE_DEPTH = Gauge(
    "attest_capacity_queue_places",
    "Places this instance's workers hold in a shared queue (working or waiting): match, pdf.",
    ["queue"],
    multiprocess_mode="livesum",
)
QUEUE_WAIT_SECONDS = Histogram(
    "attest_capacity_queue_wait_seconds",
    "Time a place waited in a shared queue before its turn to work came: match, pdf.",
    ["queue"],
    buckets=_SECONDS,
)

FETCHES = Counter(
    "attest_fetches", "Cited pages fetched, by the content_kind they were judged.", ["content_kind"]
)
FETCH_SECONDS = Histogram(
    "attest_fetch_duration_seconds",
    "Time one cited page took to fetch (every redirect hop and the body), by content_kind.",
    ["content_kind"],
    buckets=_SECONDS,
)
CROSSREF_LOOKUPS = Counter(
    "attest_crossref_lookups",
    "DOI lookups at Crossref by status (found, not_found, skipped) and why one was skipped.",
    ["status", "reason"],
)

LEDGER_INGESTS = Counter("attest_ledger_ingests", "Observation ingests (one per request).")
LEDGER_FACTS = Counter(
    "attest_ledger_fact_changes",
    "Fact versions written by ingests, by change (created, superseded, ...).",
    ["change"],
)
LEDGER_RESOLVES = Counter("attest_ledger_resolves", "Fact IDs resolved to their evidence.")
LEDGER_RECALLS = Counter("attest_ledger_recalls", "Recall requests answered.")

LOG_SIZE = Gauge(
    "attest_log_size_leaves",
    "Leaves in the transparency log after the latest append this instance made.",
    multiprocess_mode="mostrecent",
)
LOG_APPEND_SECONDS = Histogram(
    "attest_log_append_duration_seconds",
    "Time one transparency-log append took (the lock, the frontier read and the write).",
    buckets=_SECONDS,
)


@contextmanager
def timed(histogram: Histogram) -> Iterator[None]:
    """Observe the block's wall time on ``histogram`` (a labelled child or a plain one)."""
    started = time.perf_counter()
    try:
        yield
    finally:
        histogram.observe(time.perf_counter() - started)


def exposition() -> tuple[bytes, str]:
    """The text of every metric of this instance and its content type.

    In multiprocess mode a fresh registry collects every worker's files on each scrape (as
    prometheus-client prescribes); otherwise this process's own registry answers.
    """
    if os.environ.get(MULTIPROC_DIR_VARIABLE):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return generate_latest(registry), CONTENT_TYPE_LATEST
    return generate_latest(REGISTRY), CONTENT_TYPE_LATEST
