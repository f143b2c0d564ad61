"""Real HTTP servers on loopback that serve the pages verification tests read."""

from __future__ import annotations

import gzip
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import dns.resolver
import pytest
from django.core.cache import cache

from tests.verification.dns_server import DnsServer

Handler = Callable[[BaseHTTPRequestHandler], None]


@dataclass
class SeenRequest:
    path: str
    headers: dict[str, str]


@dataclass
class PageServer:
    """A threaded HTTP server whose answers each test sets by path."""

    routes: dict[str, Handler] = field(default_factory=dict)
    seen: list[SeenRequest] = field(default_factory=list)
    server: ThreadingHTTPServer | None = None

    @property
    def port(self) -> int:
        return self.server.server_address[1]

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def paths(self) -> list[str]:
        return [r.path for r in self.seen]

    def start(self) -> PageServer:
        owner = self

        class _Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                owner.seen.append(SeenRequest(self.path, dict(self.headers.items())))
                handler = owner.routes.get(self.path.split("?", 1)[0])
                try:
                    if handler is None:
                        send(self, 404, b"<html><body><p>No such page.</p></body></html>")
                    else:
                        handler(self)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up, which is what some tests want

            def log_message(self, format, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def reset(self) -> None:
        self.routes.clear()
        self.seen.clear()


def send(
    handler: BaseHTTPRequestHandler,
    status: int,
    body: bytes,
    headers: dict[str, str] | None = None,
    content_type: str = "text/html; charset=utf-8",
) -> None:
    handler.send_response(status)
    merged = {"Content-Type": content_type, "Content-Length": str(len(body)), **(headers or {})}
    for name, value in merged.items():
        handler.send_header(name, value)
    handler.end_headers()
    handler.wfile.write(body)


def page(
    body: str | bytes,
    status: int = 200,
    headers: dict[str, str] | None = None,
    content_type: str = "text/html; charset=utf-8",
) -> Handler:
    data = body.encode("utf-8") if isinstance(body, str) else body
    return lambda h: send(h, status, data, headers, content_type)


def redirect(location: str, status: int = 302) -> Handler:
    return lambda h: send(h, status, b"", {"Location": location})


def trickle(interval: float = 0.1, seconds: float = 30.0, *, in_headers: bool = False) -> Handler:
    """Answer one byte at a time, forever as far as a fetch with a deadline can tell."""

    def handler(h: BaseHTTPRequestHandler) -> None:
        stop = time.monotonic() + seconds
        if in_headers:
            h.wfile.write(b"HTTP/1.1 200 OK\r\n")
            while time.monotonic() < stop:
                h.wfile.write(b"X-Slow: a\r\n")
                h.wfile.flush()
                time.sleep(interval)
            return
        h.send_response(200)
        h.send_header("Content-Type", "text/html")
        h.end_headers()
        h.wfile.write(b"<html><body><p>")
        while time.monotonic() < stop:
            h.wfile.write(b"a")
            h.wfile.flush()
            time.sleep(interval)

    return handler


def gzip_bomb(decoded_bytes: int) -> bytes:
    """A gzip body of ``decoded_bytes`` zeros, about a thousand times smaller."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = b"\0" * (1024 * 1024)
    parts = [compressor.compress(block) for _ in range(decoded_bytes // len(block))]
    parts.append(compressor.flush())
    return b"".join(parts)


def gzipped(body: bytes) -> bytes:
    return gzip.compress(body)


@pytest.fixture(scope="session")
def _key_dir(tmp_path_factory) -> str:
    from datetime import UTC, datetime

    from receipts.keyring import ensure_key

    directory = str(tmp_path_factory.mktemp("verification-keys") / "keys")
    ensure_key(directory, now=datetime.now(UTC))
    return directory


@pytest.fixture(autouse=True)
def signing_keys(_key_dir: str, settings) -> str:
    """Every verification signs a receipt, so every test here has a key."""
    settings.ATTEST_SIGNING_KEYS = _key_dir
    return _key_dir


@pytest.fixture(scope="session")
def _page_server() -> PageServer:
    return PageServer().start()


@pytest.fixture(scope="session")
def _canary_server() -> PageServer:
    return PageServer().start()


@pytest.fixture
def pages(_page_server: PageServer, settings) -> PageServer:
    """The page server, allowed past the address block for this test, with no routes yet."""
    _page_server.reset()
    settings.ATTEST_FETCH_ALLOW = frozenset({("127.0.0.1", _page_server.port)})
    cache.clear()
    yield _page_server
    _page_server.reset()
    cache.clear()


@pytest.fixture
def canary(_canary_server: PageServer) -> PageServer:
    """A loopback server NOT in ATTEST_FETCH_ALLOW: it must never see a request."""
    _canary_server.reset()
    _canary_server.routes["/"] = page("<p>canary</p>")
    yield _canary_server
    _canary_server.reset()


@pytest.fixture
def second_site(pages, settings):
    """Another origin (its own port) beside the page server, both past the address block."""
    server = PageServer().start()
    settings.ATTEST_FETCH_ALLOW = frozenset({("127.0.0.1", pages.port), ("127.0.0.1", server.port)})
    yield server
    server.server.shutdown()


@pytest.fixture(scope="session")
def _dns_server():
    server = DnsServer()
    yield server
    server.close()


@pytest.fixture
def dns_server(_dns_server: DnsServer):
    """The system resolver, for this test only, asks a DNS server on loopback we control."""
    _dns_server.answers.clear()
    _dns_server.queries.clear()
    dns.resolver.override_system_resolver(_dns_server.resolver())
    try:
        yield _dns_server
    finally:
        dns.resolver.restore_system_resolver()
