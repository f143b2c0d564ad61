"""A loopback HTTP proxy in front of a real server that can lose a paid answer.

With ``lose_paid_answers = n`` it forwards the next ``n`` requests that carry a payment,
lets the server answer them in full (so the server charged and stored the answer), then
closes the client's connection without a byte: the answer is lost on the way back, as on
a dropped network. Every payment header it sees is kept in ``payments``.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}


class LossyProxy:
    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.lose_paid_answers = 0
        self.payments: list[str] = []
        self.lost: list[int] = []  # the upstream status of each answer that was lost
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> LossyProxy:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def _handler(self):
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
                payment = self.headers.get("PAYMENT-SIGNATURE")
                if payment:
                    proxy.payments.append(payment)
                answer = httpx.request(
                    self.command,
                    proxy.upstream + self.path,
                    content=body,
                    headers=headers,
                    timeout=120,
                    trust_env=False,
                )
                if payment and proxy.lose_paid_answers > 0:
                    proxy.lose_paid_answers -= 1
                    proxy.lost.append(answer.status_code)
                    self.close_connection = True
                    return
                self.send_response(answer.status_code)
                for name, value in answer.headers.items():
                    if name.lower() not in HOP_BY_HOP | {"content-encoding"}:
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(answer.content)))
                self.end_headers()
                self.wfile.write(answer.content)

            do_GET = _forward
            do_POST = _forward

        return Handler
