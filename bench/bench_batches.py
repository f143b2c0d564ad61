"""Batches through gunicorn against local pages, paid for real through the local facilitator.

Reports: a batch of 10 citations on 10 distinct pages, each served after a 300 ms
delay (the pages are fetched at once, so it should take about one page's delay);
verify/citations requests per second and p99 with concurrent clients; verify/quotes
with 20 quotes on a 1 MB page.
"""

from __future__ import annotations

import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
DELAY = 0.3
ROUNDS = 20
CLIENTS = 4
THROUGHPUT_SECONDS = 15.0
WORDS = [
    *("harbour", "board", "survey", "nitrate", "sample", "water", "report", "quarter"),
    *("level", "review", "season", "coast", "river", "estuary", "authority", "figure"),
]


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _prose(rng: random.Random, size: int) -> str:
    parts, length = [], 0
    while length < size:
        sentence = " ".join(rng.choice(WORDS) for _ in range(16)).capitalize() + ". "
        parts.append(sentence)
        length += len(sentence)
    return "".join(parts)


def _serve(pages: dict[str, bytes]) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            body = pages.get(self.path.split("?", 1)[0])
            if self.path.startswith("/slow/"):
                time.sleep(DELAY)
            status = 200 if body is not None else 404
            body = body if body is not None else b""
            self.send_response(status)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


class _PaidClient:
    """Posts a priced request, paying a fresh authorization of the route's offer each time."""

    def __init__(self, base: str) -> None:
        from tests.billing.conftest import Payer

        self.base = base
        self.payer = Payer()
        self.http = httpx.Client(timeout=60, trust_env=False)
        self.offers: dict[str, object] = {}

    def post(self, route: str, body: dict) -> httpx.Response:
        from x402.http import decode_payment_required_header

        if route not in self.offers:
            offer = self.http.post(f"{self.base}/v1/{route}", json=body)
            assert offer.status_code == 402, offer.text
            self.offers[route] = decode_payment_required_header(offer.headers["PAYMENT-REQUIRED"])
        payment = self.payer.pay(self.offers[route])
        response = self.http.post(
            f"{self.base}/v1/{route}", json=body, headers={"PAYMENT-SIGNATURE": payment}
        )
        response.raise_for_status()
        return response


def main() -> None:
    sys.path.insert(0, str(ROOT))
    from tests.live_service import gunicorn, server_env

    rng = random.Random(5)
    pages: dict[str, bytes] = {}
    slow_quotes = []
    for i in range(10):
        text = _prose(rng, 20_000)
        pages[f"/slow/{i}"] = f"<html><body><p>{text}</p></body></html>".encode()
        slow_quotes.append(text[5_000:5_200])
    local_quotes = []
    for i in range(5):
        text = _prose(rng, 100_000)
        pages[f"/local/{i}"] = f"<html><body><p>{text}</p></body></html>".encode()
        local_quotes.append(text[40_000:40_150])
    big = _prose(rng, 1_000_000)
    pages["/big"] = f"<html><body><p>{big}</p></body></html>".encode()
    server = _serve(pages)
    url = f"http://127.0.0.1:{server.server_address[1]}"

    with tempfile.TemporaryDirectory() as var:
        env = server_env(
            ATTEST_VAR_DIR=var,
            DATABASE_URL=f"sqlite:///{var}/bench.sqlite3",
            ATTEST_SIGNING_KEYS=f"{var}/keys",
            ATTEST_FETCH_ALLOW=f"127.0.0.1:{server.server_address[1]}",
            ATTEST_TRIAL_CALLS_PER_DAY="0",
        )
        for command in (["migrate", "--noinput"], ["ensure_signing_key"]):
            subprocess.run(
                [sys.executable, "manage.py", *command],
                cwd=ROOT,
                env=env,
                check=True,
                capture_output=True,
            )
        workers = max(2, os.cpu_count() or 2)
        with gunicorn(env, workers=workers, threads=4) as base:
            client = _PaidClient(base)
            slow_batch = {
                "citations": [
                    {"url": f"{url}/slow/{i}", "quote": q} for i, q in enumerate(slow_quotes)
                ]
            }
            first = client.post("verify/citations", slow_batch).json()
            assert first["summary"]["exact"] == 10, first["summary"]
            slow = []
            for _ in range(ROUNDS):
                started = time.perf_counter()
                client.post("verify/citations", slow_batch)
                slow.append(time.perf_counter() - started)

            local_batch = {
                "citations": [
                    {"url": f"{url}/local/{i % 5}", "quote": local_quotes[i % 5][: 140 + i]}
                    for i in range(10)
                ]
            }
            latencies: list[float] = []
            lock = threading.Lock()
            stop = time.monotonic() + THROUGHPUT_SECONDS

            def loop() -> None:
                mine = _PaidClient(base)
                while time.monotonic() < stop:
                    started = time.perf_counter()
                    mine.post("verify/citations", local_batch)
                    with lock:
                        latencies.append(time.perf_counter() - started)

            started = time.monotonic()
            with ThreadPoolExecutor(CLIENTS) as pool:
                for future in [pool.submit(loop) for _ in range(CLIENTS)]:
                    future.result()
            elapsed = time.monotonic() - started

            quotes = [big[start : start + 120] for start in range(10_000, 990_000, 49_000)][:20]
            quotes[0] = quotes[0][:60] + "x" + quotes[0][61:]  # one fuzzy search among them
            quotes_body = {"url": f"{url}/big", "quotes": quotes}
            answer = client.post("verify/quotes", quotes_body).json()
            assert answer["summary"]["failed"] == 0, answer["summary"]
            quote_times = []
            for _ in range(ROUNDS // 2):
                begun = time.perf_counter()
                client.post("verify/quotes", quotes_body)
                quote_times.append(time.perf_counter() - begun)
    server.shutdown()

    ms = 1000
    print(f"gunicorn: {workers} workers x 4 threads, cpus: {os.cpu_count()}; every call paid")
    print(
        f"10 citations on 10 pages each delayed {DELAY * ms:.0f} ms: "
        f"median {statistics.median(slow) * ms:.0f} ms, p90 {_percentile(slow, 0.9) * ms:.0f} ms, "
        f"min {min(slow) * ms:.0f} ms, max {max(slow) * ms:.0f} ms ({ROUNDS} batches)"
    )
    print(
        f"verify/citations, 10 citations on 5 local 100 KB pages, {CLIENTS} clients: "
        f"{len(latencies) / elapsed:.1f} batches/s, median "
        f"{statistics.median(latencies) * ms:.0f} ms, "
        f"p99 {_percentile(latencies, 0.99) * ms:.0f} ms ({len(latencies)} batches)"
    )
    print(
        f"verify/quotes, 20 quotes on a 1 MB page ({answer['summary']}): median "
        f"{statistics.median(quote_times) * ms:.0f} ms, max {max(quote_times) * ms:.0f} ms"
    )


if __name__ == "__main__":
    main()
