"""A process's first 402: with and without the serving hooks run before it.

The 402 offer carries the ``bazaar`` extension, built from the OpenAPI schema (seconds to
generate), and is priced through the SDK's EVM scheme (seconds to import). attest/wsgi.py
runs the serving hooks (attest.registry.prepare_to_serve) before the first request, which
build both. Each case runs in a new process (a scratch SQLite, the trial off, a page on
loopback so the offer is the answer): "cold" sends its first priced request straight
away, "prepared" runs the hooks first. Wall-clock time of the first and second 402.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from threading import Thread

from bench.setup import django_on_a_scratch_database

PAGE = b"<html><body><p>These domains may be used as illustrative examples.</p></body></html>"


def _pages() -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def do_GET(self) -> None:
            robots = self.path == "/robots.txt"
            body = b"User-agent: *\nAllow: /\n" if robots else PAGE
            self.send_response(200)
            self.send_header("Content-Type", "text/plain" if robots else "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    Thread(target=server.serve_forever, daemon=True).start()
    return server


def _case(kind: str) -> None:
    pages = _pages()
    os.environ["ATTEST_FETCH_ALLOW"] = f"127.0.0.1:{pages.server_port}"
    os.environ["ATTEST_TRIAL_CALLS_PER_DAY"] = "0"
    os.environ["ATTEST_UNPAID_RATE"] = "100000000/m"
    django_on_a_scratch_database(f"first_offer_{kind}")
    from django.test import Client

    hooks = 0.0
    if kind == "prepared":
        from attest.registry import prepare_to_serve

        started = time.perf_counter()
        prepare_to_serve()
        hooks = time.perf_counter() - started
    client = Client()
    body = {"url": f"http://127.0.0.1:{pages.server_port}/page", "quote": "illustrative examples"}
    times = []
    for _ in range(2):
        started = time.perf_counter()
        response = client.post("/v1/verify/quote", body, content_type="application/json")
        times.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 402, response.content[:300]
    print(
        f"{kind:<9} serving hooks {hooks:5.2f} s  first 402 {times[0]:7.0f} ms  "
        f"second 402 {times[1]:5.0f} ms"
    )


def main() -> None:
    for kind in ("cold", "prepared"):
        subprocess.run([sys.executable, "-m", "bench.bench_first_offer", kind], check=True)


if __name__ == "__main__":
    if len(sys.argv) > 1:
        _case(sys.argv[1])
    else:
        main()
