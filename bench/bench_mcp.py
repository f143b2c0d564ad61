"""What MCP adds to a call: ``tools/call`` on ``POST /mcp`` against the same REST route.

In one process (Django's test client through the whole middleware stack, a scratch
SQLite, the trial budget and unpaid limit out of reach), the same call is sent in turn
as a REST request, as a handshake-era MCP ``tools/call`` and as a 2026-07-28 one (its
``_meta`` envelope and mirrored headers checked), interleaved, each timed in process CPU
(``time.process_time``: the page server runs in this process too, so every path pays for
it alike). The figure that matters is "added": the median over rounds of (MCP - REST)
within a round, for each era. ``verify_quote`` fetches and matches
``bench/corpus.py:web_page`` (about 100 KB of HTML, a 125-character quote with one letter
changed, so the fuzzy path runs); ``check_receipt`` is a cheap route, so its difference is
the MCP layer alone.
"""

from __future__ import annotations

import json
import os
import statistics
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from bench import corpus
from bench.setup import django_on_a_scratch_database

ROUNDS = 60
QUOTE_CHARS = 125


def _page_server(body: bytes) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _cpu_ms(call) -> float:
    started = time.process_time()
    call()
    return (time.process_time() - started) * 1000


def _compare(label: str, rest, handshake, modern) -> None:
    rest(), handshake(), modern()  # warm: the tool table and schemas are built once
    rounds = [(_cpu_ms(rest), _cpu_ms(handshake), _cpu_ms(modern)) for _ in range(ROUNDS)]
    rest_ms = statistics.median(r for r, _, _ in rounds)
    print(f"{label:<14} REST median {rest_ms:7.2f} ms  ({ROUNDS} rounds, process CPU)")
    for era, index in (("handshake era", 1), ("2026-07-28", 2)):
        mcp_ms = statistics.median(round_[index] for round_ in rounds)
        added = statistics.median(round_[index] - round_[0] for round_ in rounds)
        print(
            f"{'':<14} MCP {era:<13} median {mcp_ms:7.2f} ms  "
            f"added (median of rounds) {added:5.2f} ms"
        )


def main() -> None:
    html = corpus.web_page(100 * 1024)
    pages = _page_server(html.encode())
    os.environ["ATTEST_FETCH_ALLOW"] = f"127.0.0.1:{pages.server_port}"
    os.environ["ATTEST_TRIAL_CALLS_PER_DAY"] = "1000000"
    os.environ["ATTEST_UNPAID_RATE"] = "100000000/m"
    os.environ["ATTEST_HOST_RATE"] = "100000000/m"  # three calls a round on one page
    django_on_a_scratch_database("mcp")
    from django.core.management import call_command
    from django.test import Client

    call_command("ensure_signing_key", verbosity=0)

    from attest_core.normalise import normalise
    from verification.engine.html_text import html_text

    text = normalise(html_text(html).text).text
    middle = len(text) // 2
    quote = text[middle : middle + QUOTE_CHARS]
    quote = quote[:60] + ("x" if quote[60] != "x" else "y") + quote[61:]
    client = Client()
    url = f"http://127.0.0.1:{pages.server_port}/page"

    def rest_call(path: str, body: dict):
        def call():
            response = client.post(path, body, content_type="application/json")
            assert response.status_code == 200, response.content

        return call

    def mcp_call(name: str, arguments: dict, *, modern: bool = False):
        params: dict = {"name": name, "arguments": arguments}
        headers = {}
        if modern:
            params["_meta"] = {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
            }
            headers = {
                "MCP-Protocol-Version": "2026-07-28",
                "Mcp-Method": "tools/call",
                "Mcp-Name": name,
            }
        message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}

        def call():
            response = client.post(
                "/mcp", json.dumps(message), content_type="application/json", headers=headers
            )
            result = response.json()["result"]
            assert response.status_code == 200 and not result["isError"], response.content
            assert ("resultType" in result) is modern

        return call

    verify = {"url": url, "quote": quote}
    receipt = json.loads(
        client.post("/v1/verify/quote", verify, content_type="application/json").content
    )["receipt"]
    _compare(
        "verify_quote",
        rest_call("/v1/verify/quote", verify),
        mcp_call("verify_quote", verify),
        mcp_call("verify_quote", verify, modern=True),
    )
    _compare(
        "check_receipt",
        rest_call("/v1/receipt/verify", {"receipt": receipt}),
        mcp_call("check_receipt", {"receipt": receipt}),
        mcp_call("check_receipt", {"receipt": receipt}, modern=True),
    )
    pages.shutdown()


if __name__ == "__main__":
    main()
