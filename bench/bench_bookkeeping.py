"""The bookkeeping of a paid verify/quote call, by difference from the necessary work
(issue 38, goal 1).

Everything a call does besides fetching, reading and matching the page and signing the
receipt — admission, limits, trial or credit, claim, records, log append, rendering — is
what the product adds around the necessary work. Measured as the difference between the
real route (``wiring.urls``, through Django's test client and every middleware) and
``bench.necessary.NecessaryView``: a DRF view on the same middleware that validates the
body, checks the address, fetches, reads, matches and signs the receipt with the same
engine functions, and does nothing else.

Both run in this process on a 101 KB page of real prose (``bench/corpus.py:web_page``)
served by another process on loopback, so ``time.thread_time`` around a call is the
server's CPU for it and not the page server's. The quote is 125 characters with one
letter changed (the fuzzy path). Four kinds alternate call by call — the necessary view,
then verify/quote as a trial, from prepaid credit and over x402 (settled by the built-in
local facilitator; payments are signed before the timed loop, as a client's work) — so a
load that changes during the run weighs on all alike. The figure is each kind's median
minus the necessary view's median, with the SQL statements each sends.

The database is ``DATABASE_URL`` when set (PostgreSQL, with ``CACHE_URL`` naming Redis for
the shared state, as production runs), else a scratch SQLite file with the process-local
cache (so the shared limits live in the database, as under ``make run``).
``BENCH_BOOKKEEPING_CALLS`` sets the calls per kind (default 200).
"""

from __future__ import annotations

import cProfile
import os
import pstats
import statistics
import time

from attest_core.normalise import normalise
from bench import corpus
from bench.setup import django_on_a_scratch_database, page_server
from verification.engine.html_text import html_text

CALLS = int(os.environ.get("BENCH_BOOKKEEPING_CALLS", "200"))
# BENCH_BOOKKEEPING_PROFILE=trial (or credit, x402, necessary): cProfile that kind's calls.
PROFILE = os.environ.get("BENCH_BOOKKEEPING_PROFILE", "")
PAGE_BYTES = 100_000
QUOTE_CHARS = 125


def _page_and_quote() -> tuple[str, str]:
    html = corpus.web_page(PAGE_BYTES)
    text = normalise(html_text(html).text).text
    return html, corpus.fuzzy_quote(text, QUOTE_CHARS)


def main() -> None:
    html, quote = _page_and_quote()
    server, port = page_server(html)
    os.environ.update(
        X402_FACILITATOR_URL="",
        ATTEST_TRIAL_CALLS_PER_DAY="1000000",
        ATTEST_UNPAID_RATE="100000000/m",
        ATTEST_HOST_RATE="100000000/m",
        ATTEST_FETCH_ALLOW=f"127.0.0.1:{port}",
    )
    django_on_a_scratch_database("bookkeeping", keep_database_url=True)
    from django.conf import settings
    from django.core.management import call_command

    call_command("ensure_signing_key", verbosity=0)
    settings.ROOT_URLCONF = "bench.necessary"
    try:
        _run(port, quote)
    finally:
        server.terminate()


def _credential(post) -> str:
    from x402.http import decode_payment_required_header, encode_payment_signature_header

    top_up = decode_payment_required_header(
        post("/v1/credits", {"amount": "100.00"})["PAYMENT-REQUIRED"]
    )
    bought = post(
        "/v1/credits",
        {"amount": "100.00"},
        HTTP_PAYMENT_SIGNATURE=encode_payment_signature_header(
            _payer().create_payment_payload(top_up)
        ),
    )
    assert bought.status_code == 201, bought.content
    return bought.json()["credential"]


_PAYER = None


def _payer():
    global _PAYER
    if _PAYER is None:
        from eth_account import Account
        from x402 import x402ClientSync
        from x402.mechanisms.evm.exact import ExactEvmClientScheme

        _PAYER = x402ClientSync()
        _PAYER.register("eip155:84532", ExactEvmClientScheme(Account.create()))
        _PAYER.set_spend_controls({"max_amount_per_payment": "$100"})
    return _PAYER


_FACILITATOR_CPU = [0.0]
_BRACKETS = {"BEGIN", "BEGIN IMMEDIATE", "COMMIT"}


def _time_the_facilitator() -> None:
    """Count the CPU the SDK's verify and settle take (for the built-in local facilitator,
    EIP-712 signature checks and its ledger rows): a real facilitator does that work in its
    own process, reached over HTTP, so it is shown apart from the call's bookkeeping."""
    from x402 import x402ResourceServerSync

    for name in ("verify_payment", "settle_payment"):
        original = getattr(x402ResourceServerSync, name)

        def timed(self, *args, _original=original, **kwargs):
            started = time.thread_time()
            try:
                return _original(self, *args, **kwargs)
            finally:
                _FACILITATOR_CPU[0] += time.thread_time() - started

        setattr(x402ResourceServerSync, name, timed)


def _check(kind: str, rail: str | None, response) -> None:
    assert response.status_code == 200, (kind, response.content)
    answer = response.json()
    assert answer["result"]["match"] == "fuzzy", (kind, answer["result"])
    if rail == "trial":
        assert answer["tier"] == "trial", answer
    elif rail is not None:
        assert answer["rail"] == rail, answer


def _counted(captured: list[dict]) -> tuple[int, int]:
    """(the call's own statements, the local facilitator's), BEGIN and COMMIT left out as
    the statement test leaves them; the facilitator's rows stand in for the chain (a real
    facilitator is reached over HTTP), so they are counted apart."""
    sent = [query["sql"] for query in captured if query["sql"] not in _BRACKETS]
    chain = sum(1 for sql in sent if "billing_localtransfer" in sql)
    return len(sent) - chain, chain


def _kinds(post, body: dict) -> tuple[dict, list[str]]:
    """The four kinds of call, and a signed payment for each x402 call."""
    from django.conf import settings
    from x402.http import decode_payment_required_header, encode_payment_signature_header

    # An x402 offer is asked for without trial: a payment header always pays, whatever else.
    settings.ATTEST_TRIAL_CALLS_PER_DAY = 0
    offer = decode_payment_required_header(post("/v1/verify/quote", body)["PAYMENT-REQUIRED"])
    settings.ATTEST_TRIAL_CALLS_PER_DAY = 1_000_000
    payments = [
        encode_payment_signature_header(_payer().create_payment_payload(offer))
        for _ in range(CALLS + 3)
    ]
    credential = _credential(post)
    kinds = {
        "necessary": ("/bench/necessary", {}, None),
        "trial": ("/v1/verify/quote", {}, "trial"),
        "credit": ("/v1/verify/quote", {"HTTP_AUTHORIZATION": f"Bearer {credential}"}, "credit"),
        "x402": ("/v1/verify/quote", {}, "x402"),
    }
    return kinds, payments


def _run(port: int, quote: str) -> None:
    from django.db import connection, reset_queries
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client = Client()
    body = {"url": f"http://127.0.0.1:{port}/article.html", "quote": quote}

    def post(path: str, data: dict, **headers):
        return client.post(path, data, content_type="application/json", **headers)

    kinds, payments = _kinds(post, body)
    cpu: dict[str, list[float]] = {kind: [] for kind in kinds}
    facilitator: list[float] = []
    _time_the_facilitator()
    profiler = cProfile.Profile(time.thread_time)  # CPU, as the figures
    statements: dict[str, tuple[int, int]] = {}
    for index in range(CALLS + 3):  # the first 3 rounds warm the caches all kinds share
        for kind, (path, headers, rail) in kinds.items():
            if kind == "x402":
                headers = {"HTTP_PAYMENT_SIGNATURE": payments[index]}
            with CaptureQueriesContext(connection) as queries:
                if kind == PROFILE and index >= 3:
                    profiler.enable()
                _FACILITATOR_CPU[0] = 0.0
                started = time.thread_time()
                response = post(path, body, **headers)
                spent = (time.thread_time() - started) * 1000
                profiler.disable()
            _check(kind, rail, response)
            if index >= 3:
                cpu[kind].append(spent)
                if kind == "x402":
                    facilitator.append(_FACILITATOR_CPU[0] * 1000)
                statements[kind] = _counted(queries.captured_queries)
            reset_queries()
    _report(cpu, facilitator, statements)
    if PROFILE:
        stats = pstats.Stats(profiler).sort_stats("cumulative")
        stats.print_stats(int(os.environ.get("BENCH_BOOKKEEPING_PROFILE_LINES", "45")))
        if os.environ.get("BENCH_BOOKKEEPING_CALLERS"):
            stats.print_callers(os.environ["BENCH_BOOKKEEPING_CALLERS"])


def _report(
    cpu: dict[str, list[float]], facilitator: list[float], statements: dict[str, tuple[int, int]]
) -> None:
    from django.conf import settings
    from django.db import connection

    load = os.getloadavg()
    floor = statistics.median(cpu["necessary"])
    shared = "Redis" if settings.CACHES["default"]["BACKEND"].startswith("django_redis") else "db"
    print(
        f"{connection.vendor} (shared state in {shared}); load average {load[0]:.2f} "
        f"{load[1]:.2f} {load[2]:.2f}; {CALLS} calls of each kind, alternating; thread CPU "
        "medians"
    )
    for kind in cpu:
        median = statistics.median(cpu[kind])
        extra = "" if kind == "necessary" else f"  bookkeeping {median - floor:5.2f} ms"
        own, chain = statements[kind]
        chained = f", and {chain} of the local facilitator's chain" if chain else ""
        print(f"{kind:>9}: {median:6.2f} ms{extra}  ({own} SQL statements{chained})", flush=True)
    spent = statistics.median(facilitator)
    x402_own = statistics.median(
        [total - chain for total, chain in zip(cpu["x402"], facilitator, strict=True)]
    )
    print(
        f"     x402 without the local facilitator's verify and settle ({spent:.2f} ms): "
        f"{x402_own:6.2f} ms  bookkeeping {x402_own - floor:5.2f} ms",
        flush=True,
    )
