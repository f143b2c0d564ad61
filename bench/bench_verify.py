"""verify/quote served as ``make run`` serves it, against a local page server.

gunicorn runs ``attest.wsgi`` with the Makefile's flags and worker count on a fresh
SQLite file, the settings left at their defaults but for three: the page server's
address may be fetched (``ATTEST_FETCH_ALLOW``), and, for the trial server, a trial
budget and unpaid limit no benchmark can exhaust (the shipped five calls a day would
stop it after five requests). On the paid server the trial is off
(``ATTEST_TRIAL_CALLS_PER_DAY=0``) and every request carries its own payment, signed
beforehand by the bench and verified and settled by the built-in local facilitator
(``X402_FACILITATOR_URL`` unset), as a client paying per call sends it.

The page is ``bench/corpus.py:web_page``: about 100 KB of HTML of real English prose
with curly quotes, dashes, no-break spaces, links and emphasis. The quote is 125
characters of its visible text with one letter changed, so the fuzzy path runs.

Latency: a bare GET of the page and a verify/quote call are timed in turn, one client,
each on a new connection as the service opens one to the page; the figure is the
median of each round's medians, and "added" is the verify median less the bare one
within the same round. Throughput: N client threads send verify/quote for a fixed
time. PDF reading is measured by ``bench/bench_pdf.py``.
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from attest_core.normalise import normalise
from bench import corpus
from verification.engine.html_text import html_text
from verification.engine.match import match_quote

ROOT = Path(__file__).resolve().parent.parent
PAGE_BYTES = 100 * 1024
QUOTE_CHARS = 125
ROUNDS = 5
PAIRS_PER_ROUND = 30
CLIENTS = (1, 4, 8)
# As `make run` serves (Makefile: WORKERS ?= 3, the `run` target's gunicorn flags).
WORKERS = 3
GUNICORN_FLAGS = [
    "--preload",
    "--timeout",
    "120",
    "--limit-request-line",
    "8190",
    "--limit-request-field_size",
    "20480",
    "--max-requests",
    "1000",
    "--max-requests-jitter",
    "100",
    "--access-logfile",
    "-",
    "--forwarded-allow-ips",
    "",
]
# The floor verify/quote is held to (issue 27: at most 2x its server CPU): a DRF view that
# parses the same body, fetches the same page with httpx and answers a small JSON.
MINIMAL_APP = "bench.minimal_drf.wsgi"
# Alternating phases: each round sends this many requests (one client) to each server in turn.
CPU_ROUNDS = 5
CPU_REQUESTS = int(os.environ.get("BENCH_VERIFY_CPU_REQUESTS", "150"))
RATE_ROUNDS = 2
# BENCH_VERIFY_BEFORE=/path/to/another/checkout adds its verify/quote to the alternation.
BEFORE = os.environ.get("BENCH_VERIFY_BEFORE", "")
RATE_SECONDS = float(os.environ.get("BENCH_VERIFY_RATE_SECONDS", "4"))


def _page() -> tuple[bytes, str, float]:
    """The page's bytes, a quote from late in its visible text with one letter changed,
    and the share of repeated 30-character windows in that text."""
    html = corpus.web_page(PAGE_BYTES)
    text = normalise(html_text(html).text).text
    quote = corpus.fuzzy_quote(text, QUOTE_CHARS)
    result = match_quote(text, quote, mode="fuzzy", case_sensitive=False, threshold=0.9)
    assert result.match == "fuzzy", result
    return html.encode(), quote, corpus.repeated_share(text)


def _serve(body: bytes) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            found = self.path == "/page"
            self.send_response(200 if found else 404)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body) if found else 0))
            self.end_headers()
            if found:
                self.wfile.write(body)

        def log_message(self, format, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Service:
    """gunicorn serving ``app`` (Attest by default, on a fresh SQLite file in its own
    directory) with `make run`'s flags."""

    def __init__(
        self, extra_env: dict[str, str], app: str = "attest.wsgi", root: Path = ROOT
    ) -> None:
        self.var = tempfile.mkdtemp(prefix="attest-bench-verify-")
        self.port = _free_port()
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("ATTEST_", "X402_"))},
            "DATABASE_URL": f"sqlite:///{self.var}/attest.sqlite3",
            "ATTEST_VAR_DIR": self.var,
            "ATTEST_SERVE_URL": f"http://127.0.0.1:{self.port}",
            **extra_env,
        }
        env.pop("CACHE_URL", None)  # `make run`'s default: the local-memory cache
        env.pop("DJANGO_SETTINGS_MODULE", None)
        python = sys.executable
        if app == "attest.wsgi":
            for command in (["migrate", "--noinput"], ["ensure_signing_key"]):
                subprocess.run(
                    [python, "manage.py", *command],
                    cwd=root,
                    env=env,
                    check=True,
                    capture_output=True,
                )
        gunicorn = Path(python).with_name("gunicorn")
        help_text = subprocess.run(
            [str(gunicorn), "--help"], capture_output=True, text=True, check=False
        ).stdout
        control = ["--no-control-socket"] if "--no-control-socket" in help_text else []
        self.process = subprocess.Popen(
            [
                str(gunicorn),
                app,
                "--bind",
                f"127.0.0.1:{self.port}",
                "--workers",
                str(WORKERS),
                *GUNICORN_FLAGS,
                *control,
            ],
            cwd=root,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        health = "/healthz" if app == "attest.wsgi" else None
        while time.monotonic() < deadline:
            try:
                if health is None:
                    with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                        return
                if self.request("GET", health)[0] == 200:
                    return
            except OSError:
                time.sleep(0.2)
        self.close()
        raise RuntimeError("gunicorn did not start")

    def request(
        self, method: str, path: str, body: bytes | None = None, headers: dict | None = None
    ) -> tuple[int, dict[str, str], bytes]:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            connection.request(method, path, body=body, headers=headers or {})
            response = connection.getresponse()
            return response.status, dict(response.getheaders()), response.read()
        finally:
            connection.close()

    def cpu_seconds(self) -> float:
        """CPU time (user and system) used so far by gunicorn's master and its workers,
        including workers already replaced (--max-requests): the master has reaped them,
        so their time is in its cutime and cstime."""
        ticks = 0
        master = _stat(self.process.pid)
        if master is not None:
            ticks += sum(int(value) for value in master[11:15])  # utime stime cutime cstime
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                fields = _stat(int(entry.name))
                if fields is not None and int(fields[1]) == self.process.pid:
                    ticks += int(fields[11]) + int(fields[12])
        return ticks / os.sysconf("SC_CLK_TCK")

    def close(self) -> None:
        self.process.send_signal(signal.SIGINT)  # gunicorn's quick shutdown
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(20)
        shutil.rmtree(self.var, ignore_errors=True)


def _stat(pid: int) -> list[str] | None:
    """/proc/PID/stat's fields after the command name (fields[0] is the state), or None
    when the process has ended."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def _bare(port: int) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request("GET", "/page")
        response = connection.getresponse()
        response.read()
        assert response.status == 200
    finally:
        connection.close()


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.1f} (5 min {five:.1f})"


def _latency(label: str, pages_port: int, call, service: _Service) -> None:
    """Rounds of bare fetch and call in turn; medians of the rounds' medians."""
    bare_medians, call_medians, added = [], [], []
    cpu_before = service.cpu_seconds()
    for round_index in range(ROUNDS):
        bare, timed = [], []
        for pair in range(PAIRS_PER_ROUND):
            started = time.perf_counter()
            _bare(pages_port)
            bare.append(time.perf_counter() - started)
            started = time.perf_counter()
            call(round_index * PAIRS_PER_ROUND + pair)
            timed.append(time.perf_counter() - started)
        bare_medians.append(statistics.median(bare))
        call_medians.append(statistics.median(timed))
        added.append(call_medians[-1] - bare_medians[-1])
    cpu = (service.cpu_seconds() - cpu_before) / (ROUNDS * PAIRS_PER_ROUND)
    print(
        f"{label}: bare fetch {_ms(statistics.median(bare_medians))}, "
        f"verify/quote {_ms(statistics.median(call_medians))}, "
        f"added {_ms(statistics.median(added))} "
        f"(rounds: {', '.join(f'{a * 1000:.1f}' for a in added)} ms; "
        f"{ROUNDS} rounds of {PAIRS_PER_ROUND} pairs), "
        f"server CPU per call {_ms(cpu)}; {_load()}",
        flush=True,
    )


def _throughput(call, clients: int, seconds: float) -> tuple[float, int]:
    """Requests/s from ``clients`` threads sending calls back to back for ``seconds``."""
    done = 0
    lock = threading.Lock()
    stop = time.monotonic() + seconds
    failures: list[BaseException] = []

    def loop() -> None:
        nonlocal done
        try:
            while time.monotonic() < stop:
                call(None)
                with lock:
                    done += 1
        except BaseException as exc:  # reported below, never swallowed
            failures.append(exc)

    started = time.monotonic()
    threads = [threading.Thread(target=loop) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise failures[0]
    return done / (time.monotonic() - started), done


def _caller(service: _Service, payload: bytes, check):
    headers = {"Content-Type": "application/json"}

    def call(_index) -> None:
        status, _, answer = service.request("POST", "/v1/verify/quote", payload, headers)
        assert status == 200, answer
        check(json.loads(answer))

    return call


def _cpu_per_request(call, service: _Service, count: int) -> float:
    before = service.cpu_seconds()
    for _ in range(count):
        call(None)
    return (service.cpu_seconds() - before) / count


def _versus(pages_port: int, quote: str) -> None:
    """verify/quote (trial calls) against the minimal DRF view, in alternating phases."""
    payload = json.dumps({"url": f"http://127.0.0.1:{pages_port}/page", "quote": quote}).encode()
    trial_env = {
        "ATTEST_FETCH_ALLOW": f"127.0.0.1:{pages_port}",
        "ATTEST_TRIAL_CALLS_PER_DAY": "1000000",
        "ATTEST_UNPAID_RATE": "1000000/m",
        "ATTEST_HOST_RATE": "1000000/m",
        "ATTEST_UNPAID_IN_FLIGHT": "1000",
    }
    services: list[_Service] = []

    def is_fuzzy(answer: dict) -> None:
        assert answer["result"]["match"] == "fuzzy", answer

    def fetched(answer: dict) -> None:
        assert answer["status"] == 200 and answer["bytes"] > 50_000, answer

    calls = {}
    try:
        services.append(_Service(trial_env))
        calls["verify/quote"] = (_caller(services[-1], payload, is_fuzzy), services[-1])
        if BEFORE:
            # Another checkout of Attest (the code before a change), served the same way.
            services.append(_Service(trial_env, root=Path(BEFORE)))
            calls["before"] = (_caller(services[-1], payload, is_fuzzy), services[-1])
        services.append(_Service({}, app=MINIMAL_APP))
        calls["minimal DRF"] = (_caller(services[-1], payload, fetched), services[-1])
    except BaseException:
        for service in services:
            service.close()
        raise
    try:
        for call, _ in calls.values():
            for _ in range(30):  # warm every worker
                call(None)
        _cpu_phase(calls)
        _rate_phase(calls)
    finally:
        for service in services:
            service.close()


def _cpu_phase(calls: dict) -> None:
    """Server CPU per request of each server, one client, in alternating rounds."""
    print(
        f"-- server CPU per request, one client, {CPU_ROUNDS} alternating rounds of "
        f"{CPU_REQUESTS} requests each; {_load()}",
        flush=True,
    )
    cpu: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(CPU_ROUNDS):
        for name, (call, service) in calls.items():
            cpu[name].append(_cpu_per_request(call, service, CPU_REQUESTS))
    for name, figures in cpu.items():
        print(
            f"{name:>13}: median {_ms(statistics.median(figures))} "
            f"(rounds: {', '.join(f'{f * 1000:.2f}' for f in figures)} ms)"
        )
    for name in [name for name in cpu if name != "minimal DRF"]:
        ratios = [a / b for a, b in zip(cpu[name], cpu["minimal DRF"], strict=True)]
        print(
            f"ratio {name} / minimal DRF: median {statistics.median(ratios):.2f}x "
            f"(rounds: {', '.join(f'{r:.2f}' for r in ratios)}); {_load()}",
            flush=True,
        )


def _rate_phase(calls: dict) -> None:
    """Requests/s of each server at 1, 4 and 8 clients, in alternating rounds."""
    print(
        f"-- requests/s, {RATE_ROUNDS} alternating rounds of {RATE_SECONDS:.0f} s per "
        f"server and client count (best round; server CPU per request in it)",
        flush=True,
    )
    for clients in CLIENTS:
        best: dict[str, tuple[float, float]] = {}
        for _ in range(RATE_ROUNDS):
            for name, (call, service) in calls.items():
                before = service.cpu_seconds()
                rate, done = _throughput(call, clients, RATE_SECONDS)
                per = (service.cpu_seconds() - before) / done
                if rate > best.get(name, (0.0, 0.0))[0]:
                    best[name] = (rate, per)
        print(
            f"{clients} client{'s' if clients > 1 else ' '}: "
            + "; ".join(
                f"{name} {rate:.0f} requests/s ({_ms(per)} CPU each)"
                for name, (rate, per) in best.items()
            )
            + f"; {_load()}",
            flush=True,
        )


def _trial_latency(pages_port: int, quote: str) -> None:
    service = _Service(
        {
            "ATTEST_FETCH_ALLOW": f"127.0.0.1:{pages_port}",
            "ATTEST_TRIAL_CALLS_PER_DAY": "1000000",
            "ATTEST_UNPAID_RATE": "1000000/m",
            "ATTEST_HOST_RATE": "1000000/m",
            "ATTEST_UNPAID_IN_FLIGHT": "1000",
        }
    )
    payload = json.dumps({"url": f"http://127.0.0.1:{pages_port}/page", "quote": quote}).encode()

    def is_fuzzy(answer: dict) -> None:
        assert answer["result"]["match"] == "fuzzy", answer

    call = _caller(service, payload, is_fuzzy)
    try:
        for _ in range(20):  # warm every worker
            call(None)
        _latency("trial call ", pages_port, call, service)
    finally:
        service.close()


def _paid_run(pages_port: int, quote: str) -> None:
    from eth_account import Account
    from x402 import x402ClientSync
    from x402.http import decode_payment_required_header, encode_payment_signature_header
    from x402.mechanisms.evm.exact import ExactEvmClientScheme

    service = _Service(
        {
            "ATTEST_FETCH_ALLOW": f"127.0.0.1:{pages_port}",
            "ATTEST_TRIAL_CALLS_PER_DAY": "0",  # no trial: every call pays
            "ATTEST_HOST_RATE": "1000000/m",
        }
    )
    payload = json.dumps({"url": f"http://127.0.0.1:{pages_port}/page", "quote": quote}).encode()
    headers = {"Content-Type": "application/json"}
    try:
        status, offer_headers, _ = service.request("POST", "/v1/verify/quote", payload, headers)
        assert status == 402, status
        offer = decode_payment_required_header(offer_headers["PAYMENT-REQUIRED"])
        payer = x402ClientSync()
        payer.register(offer.accepts[0].network, ExactEvmClientScheme(Account.create()))
        count = 10 + ROUNDS * PAIRS_PER_ROUND
        signed = time.perf_counter()
        payments = [
            encode_payment_signature_header(payer.create_payment_payload(offer))
            for _ in range(count)
        ]
        signing = (time.perf_counter() - signed) / count

        def call(index) -> None:
            status, answer_headers, answer = service.request(
                "POST",
                "/v1/verify/quote",
                payload,
                {**headers, "PAYMENT-SIGNATURE": payments[index]},
            )
            assert status == 200, answer
            assert "PAYMENT-RESPONSE" in answer_headers, answer_headers

        for index in range(ROUNDS * PAIRS_PER_ROUND, count):  # warm every worker
            call(index)
        print(f"(payments signed by the client beforehand: {_ms(signing)} each, not timed)")
        _latency("paid call  ", pages_port, call, service)
    finally:
        service.close()


def main() -> None:
    body, quote, repeated = _page()
    pages = _serve(body)
    pages_port = pages.server_address[1]
    print(
        f"page: {len(body) / 1024:.0f} KB HTML of real prose (repeated 30-character windows: "
        f"{repeated:.1%}), quote {len(quote)} characters with one letter changed (fuzzy path)"
    )
    print(
        f"gunicorn: {WORKERS} sync workers with `make run`'s flags, SQLite, "
        f"cpus: {os.cpu_count()}, {_load()}",
        flush=True,
    )
    parts = os.environ.get("BENCH_VERIFY_PARTS", "versus,trial,paid").split(",")
    try:
        if "versus" in parts:
            _versus(pages_port, quote)
        if "trial" in parts:
            _trial_latency(pages_port, quote)
        if "paid" in parts:
            _paid_run(pages_port, quote)
    finally:
        pages.shutdown()
    print(f"after: {_load()}")


if __name__ == "__main__":
    main()
