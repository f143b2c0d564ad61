"""verify/quote through gunicorn against a local page server.

Reports requests per second and the latency verify/quote adds over a bare
fetch of the same 100 KB page. PDF reading is measured by ``bench/bench_pdf.py``.
"""

from __future__ import annotations

import os
import random
import socket
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
PAGE_BYTES = 100 * 1024
SEQUENTIAL = 200
CONCURRENT_CLIENTS = 8
THROUGHPUT_SECONDS = 10.0
WORKERS = max(2, os.cpu_count() or 2)

WORDS = [
    *("harbour", "board", "survey", "nitrate", "sample", "water", "report", "quarter"),
    *("level", "review", "season", "coast", "river", "estuary", "authority", "figure"),
    *("measure", "standard", "result", "public", "record"),
]


def _page() -> tuple[bytes, str]:
    """About 100 KB of HTML paragraphs, and a quote from near the end with one typo."""
    rng = random.Random(7)
    paragraphs = []
    size = 0
    while size < PAGE_BYTES:
        sentence = " ".join(rng.choice(WORDS) for _ in range(18)).capitalize() + "."
        paragraph = f"<p>{sentence} {sentence[::-1].capitalize()}</p>\n"
        paragraphs.append(paragraph)
        size += len(paragraph)
    target = paragraphs[-5][3:-5].split(". ")[0]
    quote = target[:40] + "x" + target[41:]  # one substitution: the fuzzy path runs
    head = "<!doctype html><html><head><title>Bench page</title></head>"
    html = f"{head}<body>{''.join(paragraphs)}</body></html>"
    return html.encode(), quote


def _serve(body: bytes) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            if self.path == "/page":
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            else:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

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


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _start_service(env: dict[str, str], port: int) -> subprocess.Popen:
    python = sys.executable
    for command in (["migrate", "--noinput"], ["ensure_signing_key"]):
        subprocess.run(
            [python, "manage.py", *command], cwd=ROOT, env=env, check=True, capture_output=True
        )
    gunicorn = Path(python).with_name("gunicorn")
    process = subprocess.Popen(
        [str(gunicorn), "attest.wsgi", "--bind", f"127.0.0.1:{port}", "--workers", str(WORKERS)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return process
        except httpx.HTTPError:
            time.sleep(0.2)
    process.kill()
    raise RuntimeError("gunicorn did not start")


def bench_service() -> None:
    body, quote = _page()
    pages = _serve(body)
    page_url = f"http://127.0.0.1:{pages.server_address[1]}/page"
    port = _free_port()
    with tempfile.TemporaryDirectory() as var:
        env = {
            **os.environ,
            "ATTEST_VAR_DIR": var,
            "DATABASE_URL": f"sqlite:///{var}/bench.sqlite3",
            "ATTEST_SIGNING_KEYS": f"{var}/keys",
            "ATTEST_FETCH_ALLOW": f"127.0.0.1:{pages.server_address[1]}",
            "LOG_LEVEL": "WARNING",
        }
        service = _start_service(env, port)
        try:
            verify_url = f"http://127.0.0.1:{port}/v1/verify/quote"
            payload = {"url": page_url, "quote": quote}
            with httpx.Client(timeout=30, trust_env=False) as client:
                first = client.post(verify_url, json=payload)
                first.raise_for_status()
                assert first.json()["result"]["match"] == "fuzzy", first.json()["result"]
                bare, verify = [], []
                for _ in range(SEQUENTIAL):
                    started = time.perf_counter()
                    client.get(page_url).raise_for_status()
                    bare.append(time.perf_counter() - started)
                    started = time.perf_counter()
                    client.post(verify_url, json=payload).raise_for_status()
                    verify.append(time.perf_counter() - started)

            done = 0
            stop = time.monotonic() + THROUGHPUT_SECONDS
            lock = threading.Lock()

            def client_loop() -> None:
                nonlocal done
                with httpx.Client(timeout=30, trust_env=False) as client:
                    while time.monotonic() < stop:
                        client.post(verify_url, json=payload).raise_for_status()
                        with lock:
                            done += 1

            started = time.monotonic()
            with ThreadPoolExecutor(CONCURRENT_CLIENTS) as pool:
                for future in [pool.submit(client_loop) for _ in range(CONCURRENT_CLIENTS)]:
                    future.result()
            elapsed = time.monotonic() - started
        finally:
            service.terminate()
            service.wait(10)
            pages.shutdown()

    ms = 1000
    print(f"page: {len(body) / 1024:.0f} KB HTML, quote {len(quote)} chars (fuzzy path)")
    print(f"gunicorn workers: {WORKERS}, cpus: {os.cpu_count()}")
    print(
        f"bare fetch:   median {statistics.median(bare) * ms:.1f} ms, "
        f"p95 {_percentile(bare, 0.95) * ms:.1f} ms"
    )
    print(
        f"verify/quote: median {statistics.median(verify) * ms:.1f} ms, "
        f"p95 {_percentile(verify, 0.95) * ms:.1f} ms"
    )
    added = statistics.median(verify) - statistics.median(bare)
    print(f"added by verify/quote: median {added * ms:.1f} ms")
    print(
        f"throughput: {done / elapsed:.1f} requests/s "
        f"({CONCURRENT_CLIENTS} clients, {elapsed:.0f} s, {done} requests)"
    )


def main() -> None:
    bench_service()


if __name__ == "__main__":
    main()
