"""Crossref's REST API on loopback, answering in its real wire format.

``GET /works/{doi}`` answers ``{"status": "ok", "message-type": "work",
"message-version": "1.0.0", "message": {...}}`` or Crossref's plain-text 404
("Resource not found."); ``GET /works?filter=updates:{doi}`` answers a
``work-list`` of the works whose ``update-to`` names the DOI, honouring
``select`` and ``rows``. Every answer carries ``X-Rate-Limit-Limit`` and
``X-Rate-Limit-Interval`` as Crossref's do. A test can make answers slow, or
answer 429 (Crossref's HTML body, its headers) or 500 instead.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

TOO_MANY = (
    b"<html><body><h1>429 Too Many Requests</h1>\n"
    b"You have sent too many requests in a given amount of time.\n</body></html>\n"
)


@dataclass
class Seen:
    path: str
    query: dict[str, list[str]]
    user_agent: str
    started: float  # time.monotonic() in this process
    ended: float = 0.0


@dataclass
class Refusal:
    status: int
    body: bytes
    headers: dict[str, str]
    content_type: str


class CrossrefServer:
    """A threaded server holding works by DOI; answers can be made slow or refused."""

    def __init__(self) -> None:
        self.works: dict[str, dict[str, Any]] = {}
        # Any DOI starting with this prefix exists, as a plain journal article.
        self.generated_prefix: str | None = None
        self.delay = 0.0
        self.refusal: Refusal | None = None
        self.limit, self.interval = "50", "1s"
        self.seen: list[Seen] = []
        self.in_flight = 0
        self.most_in_flight = 0
        # A request a test gave up on may still be answering after the next test began:
        # only requests of the current generation are counted.
        self.generation = 0
        self._lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.httpd.daemon_threads = True

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def start(self) -> CrossrefServer:
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def reset(self) -> None:
        self.works.clear()
        self.generated_prefix = None
        self.delay = 0.0
        self.refusal = None
        self.limit, self.interval = "50", "1s"
        with self._lock:
            self.seen.clear()
            self.in_flight = self.most_in_flight = 0
            self.generation += 1

    def add(self, *messages: dict[str, Any]) -> None:
        for message in messages:
            self.works[message["DOI"].lower()] = message

    def refuse_with_429(self, headers: dict[str, str] | None = None) -> None:
        self.refusal = Refusal(429, TOO_MANY, headers or {}, "text/html")

    def refuse_with_500(self) -> None:
        self.refusal = Refusal(500, b"Internal Server Error", {}, "text/plain")

    def work_paths(self) -> list[str]:
        return [s.path for s in self.seen if s.path != "/works"]

    # --- answers -----------------------------------------------------------------------

    def _work(self, doi: str) -> dict[str, Any] | None:
        if doi in self.works:
            return self.works[doi]
        if self.generated_prefix and doi.startswith(self.generated_prefix):
            return {
                "DOI": doi,
                "type": "journal-article",
                "title": [f"Generated work {doi}"],
                "container-title": ["Journal of Generated Works"],
                "issued": {"date-parts": [[2021, 5, 4]]},
                "author": [{"given": "Ada", "family": "Lovelace", "sequence": "first"}],
                "relation": {},
            }
        return None

    def _updates(self, doi: str, select: list[str], rows: int) -> dict[str, Any]:
        items = []
        for work in self.works.values():
            targets = [u.get("DOI", "").lower() for u in work.get("update-to", [])]
            if doi in targets:
                items.append({k: v for k, v in work.items() if not select or k in select})
        return {
            "facets": {},
            "total-results": len(items),
            "items": items[:rows],
            "items-per-page": rows,
            "query": {"start-index": 0, "search-terms": None},
        }

    def answer(self, path: str, query: dict[str, list[str]]) -> tuple[int, bytes, str]:
        if path.startswith("/works/"):
            work = self._work(unquote(path[len("/works/") :]).lower())
            if work is None:
                return 404, b"Resource not found.", "text/plain"
            envelope = {"status": "ok", "message-type": "work", "message-version": "1.0.0"}
            return 200, json.dumps({**envelope, "message": work}).encode(), "application/json"
        if path == "/works" and query.get("filter", [""])[0].startswith("updates:"):
            doi = query["filter"][0][len("updates:") :].lower()
            select = [s for s in query.get("select", [""])[0].split(",") if s]
            rows = int(query.get("rows", ["20"])[0])
            envelope = {"status": "ok", "message-type": "work-list", "message-version": "1.0.0"}
            message = self._updates(doi, select, rows)
            return 200, json.dumps({**envelope, "message": message}).encode(), "application/json"
        return 404, b"Resource not found.", "text/plain"

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                seen = Seen(
                    path=parts.path,
                    query=parse_qs(parts.query),
                    user_agent=self.headers.get("User-Agent", ""),
                    started=time.monotonic(),
                )
                with server._lock:
                    generation = server.generation
                    server.seen.append(seen)
                    server.in_flight += 1
                    server.most_in_flight = max(server.most_in_flight, server.in_flight)
                try:
                    if server.delay:
                        time.sleep(server.delay)
                    headers = {
                        "X-Rate-Limit-Limit": server.limit,
                        "X-Rate-Limit-Interval": server.interval,
                    }
                    if server.refusal is not None:
                        status, body = server.refusal.status, server.refusal.body
                        content_type = server.refusal.content_type
                        headers.update(server.refusal.headers)
                    else:
                        status, body, content_type = server.answer(seen.path, seen.query)
                    self.send_response(status)
                    self.send_header("Content-Type", content_type)
                    self.send_header("Content-Length", str(len(body)))
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up waiting, as the timeout test wants
                finally:
                    with server._lock:
                        if generation == server.generation:
                            server.in_flight -= 1
                        seen.ended = time.monotonic()

            def log_message(self, format, *args) -> None:
                pass

        return Handler
