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
THROUGHPUT_SECONDS = 6.0
CLIENTS = (1, 4, 8)
# As `make run` serves (Makefile: WORKERS ?= 3, the same gunicorn flags).
WORKERS = 3
GUNICORN_FLAGS = [
    "--timeout",
    "120",
    "--limit-request-line",
    "8190",
    "--limit-request-field_size",
    "20480",
    "--access-logfile",
    "-",
    "--forwarded-allow-ips",
    "",
]


def _page() -> tuple[bytes, str, float]:
    """The page's bytes, a quote from late in its visible text with one letter changed,
    and the share of repeated 30-character windows in that text."""
    html = corpus.web_page(PAGE_BYTES)
    text = normalise(html_text(html).text).text
    start = text.index(" ", int(len(text) * 0.9)) + 1
    target = text[start : start + QUOTE_CHARS]
    middle = QUOTE_CHARS // 3
    changed = "x" if target[middle] != "x" else "y"
    quote = target[:middle] + changed + target[middle + 1 :]
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
    """gunicorn serving Attest on a fresh SQLite file in its own directory."""

    def __init__(self, extra_env: dict[str, str]) -> None:
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
        python = sys.executable
        for command in (["migrate", "--noinput"], ["ensure_signing_key"]):
            subprocess.run(
                [python, "manage.py", *command],
                cwd=ROOT,
                env=env,
                check=True,
                capture_output=True,
            )
        gunicorn = Path(python).with_name("gunicorn")
        self.process = subprocess.Popen(
            [
                str(gunicorn),
                "attest.wsgi",
                "--bind",
                f"127.0.0.1:{self.port}",
                "--workers",
                str(WORKERS),
                *GUNICORN_FLAGS,
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if self.request("GET", "/healthz")[0] == 200:
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
        """CPU time (user and system) used so far by gunicorn's master and its workers."""
        total = 0
        pids = [self.process.pid]
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                except OSError:
                    continue  # the process ended meanwhile
                if int(fields[1]) == self.process.pid:
                    pids.append(int(entry.name))
        for pid in pids:
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            total += int(fields[11]) + int(fields[12])  # utime, stime
        return total / os.sysconf("SC_CLK_TCK")

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(20)
        shutil.rmtree(self.var, ignore_errors=True)


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
    return f"{seconds * 1000:.1f} ms"


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
        f"{ROUNDS} rounds of {PAIRS_PER_ROUND} pairs)",
        flush=True,
    )
    print(
        f"{label}: server CPU per call {_ms(cpu)} (gunicorn's processes, from /proc; "
        f"{2 / cpu:.0f} calls/s would fill 2 cores)",
        flush=True,
    )


def _throughput(call, clients: int) -> tuple[float, float]:
    done = 0
    lock = threading.Lock()
    stop = time.monotonic() + THROUGHPUT_SECONDS
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


def _trial_run(pages_port: int, body: bytes, quote: str) -> None:
    service = _Service(
        {
            "ATTEST_FETCH_ALLOW": f"127.0.0.1:{pages_port}",
            "ATTEST_TRIAL_CALLS_PER_DAY": "1000000",
            "ATTEST_UNPAID_RATE": "1000000/m",
        }
    )
    payload = json.dumps({"url": f"http://127.0.0.1:{pages_port}/page", "quote": quote}).encode()
    headers = {"Content-Type": "application/json"}

    def call(_index) -> None:
        status, _, answer = service.request("POST", "/v1/verify/quote", payload, headers)
        assert status == 200, answer
        assert json.loads(answer)["result"]["match"] == "fuzzy", answer

    try:
        for _ in range(20):  # warm every worker
            call(None)
        _latency("trial call ", pages_port, call, service)
        rates, cpu_before, calls = {}, service.cpu_seconds(), 0
        for clients in CLIENTS:
            rates[clients], done = _throughput(call, clients)
            calls += done
        cpu = (service.cpu_seconds() - cpu_before) / calls
        print(
            "trial call throughput: "
            + ", ".join(f"{rate:.0f} requests/s at {n} clients" for n, rate in rates.items())
            + f" (server CPU per call {_ms(cpu)})",
            flush=True,
        )
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
        f"gunicorn: {WORKERS} sync workers as `make run`, SQLite, cpus: {os.cpu_count()}, "
        f"load average before: {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    try:
        _trial_run(pages_port, body, quote)
        _paid_run(pages_port, quote)
    finally:
        pages.shutdown()
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
