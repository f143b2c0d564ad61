"""The one guarded fetcher: every outbound page request of Attest goes through here.

A URL is parsed and its host canonicalised, resolved once, and refused unless
every address is public (ATTEST_FETCH_ALLOW is the only exception). The
connection is then made to the address that was checked, with the original
Host header and TLS server name, so a second DNS answer cannot send us
elsewhere. Redirects are followed by hand, each hop checked the same way. A
total deadline bounds every socket read, and the decoded body is capped while
it is being decompressed.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urljoin

import httpcore
import httpx
from django.conf import settings

from attest.errors import AttestError, Blocked, Unprocessable
from attest.tracing import traced_transport
from verification.network.addresses import (
    REASON_WORDS,
    InvalidURL,
    ParsedURL,
    address_problem,
    parse_url,
)

USER_AGENT = "AttestBot/1.0 (+https://github.com/attest/attest; quote verification)"
ROBOTS_TOKEN = "AttestBot"
# Only encodings we decode ourselves, so the byte cap holds inside the decompressor.
ACCEPT_ENCODING = "gzip, deflate"
ACCEPT = "text/html,application/xhtml+xml,application/pdf;q=0.9,text/plain;q=0.8,*/*;q=0.1"

MAX_REDIRECTS = 5
CONNECT_TIMEOUT = 5.0
READ_TIMEOUT = 10.0
CHUNK = 64 * 1024
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
# A resolver that failed or timed out is asked again after this many seconds.
DNS_RETRY_AFTER = 30
# getaddrinfo's answers for a name that does not exist or has no address; every other
# failure (EAI_AGAIN: a timeout or SERVFAIL, EAI_FAIL, EAI_SYSTEM, ...) may pass.
_NO_SUCH_HOST = frozenset(
    getattr(socket, name)
    for name in ("EAI_NONAME", "EAI_NODATA", "EAI_ADDRFAMILY")
    if hasattr(socket, name)
)


class HostNotFound(Unprocessable):
    code = "host_not_found"
    message = "The URL's host name does not resolve; check the spelling of the host."


class DnsUnavailable(AttestError):
    status_code = 503
    code = "dns_unavailable"
    message = (
        "The host name could not be looked up just now (our resolver failed or timed out); "
        "retry after the seconds in Retry-After. This call was not charged."
    )


class BlockedAddress(Blocked):
    message = "That URL points at a private, loopback or otherwise non-public address."


class RedirectRefused(Blocked):
    """A redirect to a URL that is never fetched: another scheme, or no URL at all."""

    message = "The page redirected to a URL that is not fetched; only http and https are."


def redirect_refused(location: str, redirected_from: str, why: str) -> RedirectRefused:
    """The refusal for a redirect we will not follow, naming the scheme it asked for."""
    scheme = location.split(":", 1)[0].strip().lower() if ":" in location else ""
    named = f"a {scheme}: URL" if scheme else "a URL that cannot be parsed"
    return RedirectRefused(
        f"The page redirected to {named}, which is not fetched ({why}); "
        "only http and https URLs with a valid host are followed.",
        details={
            "reason": "redirect_not_followed",
            "scheme": scheme,
            "redirected_from": redirected_from,
        },
    )


def blocked_address(host: str, reason: str) -> BlockedAddress:
    """The refusal for a host that resolves to a non-public address, naming why but not where."""
    # The address itself is never shown: echoing what a host resolved to would make
    # every refusal a free probe of the deployment's own network.
    return BlockedAddress(
        f"{host} points at {REASON_WORDS[reason]}, which Attest never fetches.",
        details={"host": host, "reason": reason},
    )


@dataclass(frozen=True)
class Target:
    """A parsed URL together with the addresses that were resolved and checked for it."""

    parsed: ParsedURL
    addresses: tuple[str, ...]
    # The origin's robots.txt rules (rule, body) as admission read them, when it did: the
    # fetch's turn of the site budget uses them instead of reading the store again.
    robots: tuple[str, str] | None = field(default=None, compare=False)

    @property
    def url(self) -> str:
        return self.parsed.url


@dataclass
class Hop:
    url: str
    status: int
    address: str | None


@dataclass
class FetchResult:
    """What came back, or how the fetch ended (``outcome`` other than ``ok``)."""

    requested_url: str
    final_url: str
    outcome: str  # ok | timeout | too_large | connection_failed | too_many_redirects | bad_encoding
    http_status: int | None = None
    headers: httpx.Headers = field(default_factory=httpx.Headers)
    body: bytes = b""
    address: str | None = None
    redirects: list[Hop] = field(default_factory=list)
    retrieved_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    elapsed_ms: float = 0.0
    detail: str = ""

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "").split(";", 1)[0].strip().lower()

    def evidence(self) -> dict[str, Any]:
        """Network facts worth signing: where we connected and how we got there."""
        return {
            "address": self.address,
            "redirects": [{"url": h.url, "status": h.status} for h in self.redirects],
            "content_type": self.content_type or None,
            "bytes": len(self.body),
            "outcome": self.outcome,
        }


# --- resolving and checking -------------------------------------------------


def _allowed_pairs() -> frozenset[tuple[str, int]]:
    return settings.ATTEST_FETCH_ALLOW


def resolve(parsed: ParsedURL) -> tuple[str, ...]:
    """All addresses of the host, in the resolver's order.

    HostNotFound when the name does not exist or has no address; DnsUnavailable
    (503, retried later) when the resolver itself failed or timed out, since the
    name may well exist.
    """
    if parsed.ip is not None:
        return (str(parsed.ip),)
    try:
        infos = socket.getaddrinfo(parsed.host, parsed.port, type=socket.SOCK_STREAM)
    except UnicodeError:
        raise HostNotFound(details={"host": parsed.host}) from None
    except socket.gaierror as exc:
        if exc.errno in _NO_SUCH_HOST:
            raise HostNotFound(details={"host": parsed.host}) from None
        raise DnsUnavailable(
            details={"host": parsed.host, "reason": exc.strerror or "resolver failure"},
            retry_after=DNS_RETRY_AFTER,
        ) from None
    # str() for mypy: typeshed admits any family's address; INET and INET6 give a string.
    addresses = tuple(dict.fromkeys(str(info[4][0]) for info in infos))
    if not addresses:
        raise HostNotFound(details={"host": parsed.host})
    return addresses


def check_url(url: str) -> Target:
    """Parse, resolve and check a URL; raise InvalidURL, HostNotFound, DnsUnavailable or
    BlockedAddress."""
    parsed = parse_url(url)
    addresses = resolve(parsed)
    allowed = _allowed_pairs()
    if (parsed.host, parsed.port) not in allowed:
        for address in addresses:
            problem = address_problem(address)
            if problem is not None and (address, parsed.port) not in allowed:
                raise blocked_address(parsed.host, problem)
    return Target(parsed=parsed, addresses=addresses)


# --- the pinned transport -----------------------------------------------------


def _remaining(deadline: float) -> float:
    return deadline - time.monotonic()


class _DeadlineStream(httpcore.NetworkStream):
    """A socket stream whose every read and write stops at the fetch's deadline."""

    def __init__(self, inner: httpcore.NetworkStream, deadline: float) -> None:
        self._inner = inner
        self._deadline = deadline

    def _timeout(self, timeout: float | None, exc: type[Exception]) -> float:
        left = _remaining(self._deadline)
        if left <= 0:
            raise exc("The fetch deadline passed.")
        return left if timeout is None else min(timeout, left)

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, self._timeout(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, self._timeout(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context, server_hostname=None, timeout=None) -> httpcore.NetworkStream:
        inner = self._inner.start_tls(
            ssl_context, server_hostname, self._timeout(timeout, httpcore.ConnectTimeout)
        )
        return _DeadlineStream(inner, self._deadline)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _PinnedBackend(httpcore.NetworkBackend):
    """Connects to the checked addresses of one host instead of resolving it again."""

    def __init__(self, target: Target, deadline: float) -> None:
        self._target = target
        self._deadline = deadline
        self._inner = httpcore.SyncBackend()
        self.connected_to: str | None = None

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        if host != self._target.parsed.host or port != self._target.parsed.port:
            raise httpcore.ConnectError(f"Refusing to connect to unchecked host {host}:{port}.")
        error: Exception = httpcore.ConnectError("No address to connect to.")
        for address in self._target.addresses:
            left = _remaining(self._deadline)
            if left <= 0:
                raise httpcore.ConnectTimeout("The fetch deadline passed.")
            try:
                stream = self._inner.connect_tcp(
                    address,
                    port,
                    timeout=min(timeout or left, left),
                    local_address=local_address,
                    socket_options=socket_options,
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                error = exc
                continue
            self.connected_to = address
            return _DeadlineStream(stream, self._deadline)
        raise error

    def connect_unix_socket(self, path, timeout=None, socket_options=None):
        raise httpcore.ConnectError("Unix sockets are never fetched.")

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


@contextlib.contextmanager
def _httpx_errors() -> Iterator[None]:
    """Present httpcore's errors as httpx's, as httpx's own transport does."""
    try:
        yield
    except httpcore.TimeoutException as exc:
        raise httpx.TimeoutException(str(exc)) from exc
    except httpcore.ConnectError as exc:
        raise httpx.ConnectError(str(exc)) from exc
    except (httpcore.NetworkError, httpcore.ProtocolError) as exc:
        raise httpx.TransportError(str(exc)) from exc


class _PinnedResponseStream(httpx.SyncByteStream):
    def __init__(self, inner) -> None:
        self._inner = inner

    def __iter__(self) -> Iterator[bytes]:
        with _httpx_errors():
            yield from self._inner

    def close(self) -> None:
        with _httpx_errors():
            self._inner.close()


_ssl_context: ssl.SSLContext | None = None
_ssl_lock = threading.Lock()


def _shared_ssl_context() -> ssl.SSLContext:
    """One verifying TLS context per process: loading the CA bundle costs ~35 ms a time."""
    global _ssl_context
    with _ssl_lock:
        if _ssl_context is None:
            _ssl_context = httpx.create_ssl_context(trust_env=False)
        return _ssl_context


class PinnedTransport(httpx.BaseTransport):
    """An httpx transport over httpcore whose connections go only to a checked address."""

    def __init__(self, target: Target, deadline: float) -> None:
        self.backend = _PinnedBackend(target, deadline)
        self.status: int | None = None  # kept for when httpx raises after the answer came
        self.location = ""  # likewise the answer's Location, for a redirect httpx cannot build
        self._pool = httpcore.ConnectionPool(
            ssl_context=_shared_ssl_context(),
            max_connections=1,
            retries=0,
            network_backend=self.backend,
        )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        core_request = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        with _httpx_errors():
            response = self._pool.handle_request(core_request)
        self.status = response.status
        self.location = next(
            (
                value.decode("latin-1")
                for name, value in response.headers
                if name.lower() == b"location"
            ),
            "",
        )
        return httpx.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_PinnedResponseStream(response.stream),
            extensions=response.extensions,
        )

    def close(self) -> None:
        self._pool.close()


# --- decoding under a cap ---------------------------------------------------------


class _Decoder:
    """Decompress gzip or deflate without ever producing more than the cap allows."""

    def __init__(self, encoding: str) -> None:
        self._zlib: Any = None
        self._pending_deflate = encoding == "deflate"
        if encoding in {"gzip", "x-gzip"}:
            self._zlib = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif encoding not in {"", "identity", "deflate"}:
            raise ValueError(encoding)

    def decode(self, data: bytes, room: int) -> bytes:
        if self._pending_deflate and data:
            # "deflate" is a zlib stream by the RFC, raw deflate in some servers.
            zlib_header = (
                len(data) >= 2 and (data[0] & 0x0F) == 8 and (data[0] << 8 | data[1]) % 31 == 0
            )
            self._zlib = zlib.decompressobj(zlib.MAX_WBITS if zlib_header else -zlib.MAX_WBITS)
            self._pending_deflate = False
        if self._zlib is None:
            return data[:room]
        out = self._zlib.decompress(data, room)
        while len(out) < room and self._zlib.unconsumed_tail:
            out += self._zlib.decompress(self._zlib.unconsumed_tail, room - len(out))
        return out


def _read_body(response: httpx.Response, max_bytes: int) -> tuple[bytes, str]:
    encoding = response.headers.get("content-encoding", "").strip().lower()
    try:
        decoder = _Decoder(encoding)
    except ValueError:
        return b"", "bad_encoding"
    body = bytearray()
    raw_seen = 0
    try:
        for chunk in response.iter_raw(CHUNK):
            raw_seen += len(chunk)
            # One byte beyond the cap is enough to know the body is too large.
            body += decoder.decode(chunk, max_bytes + 1 - len(body))
            if len(body) > max_bytes or raw_seen > max_bytes:
                return bytes(body[:max_bytes]), "too_large"
    except zlib.error:
        return b"", "bad_encoding"
    return bytes(body), "ok"


# --- fetching -------------------------------------------------------------------


def fetch(
    target: Target,
    *,
    max_bytes: int | None = None,
    deadline_seconds: float | None = None,
    before_hop: Callable[[Target], None] | None = None,
) -> FetchResult:
    """GET a checked target, following at most five redirects, each one checked again.

    ``before_hop`` runs for every redirect target after its address check
    (robots.txt uses it). The deadline and byte cap default to the settings
    ATTEST_FETCH_DEADLINE and ATTEST_FETCH_MAX_BYTES. A redirect to a host that
    does not resolve or to a refused address raises, as for the first URL.
    """
    max_bytes = max_bytes or settings.ATTEST_FETCH_MAX_BYTES
    started = time.monotonic()
    deadline = started + (deadline_seconds or settings.ATTEST_FETCH_DEADLINE)
    result = FetchResult(requested_url=target.url, final_url=target.url, outcome="ok")
    headers = {
        "User-Agent": USER_AGENT,
        "Accept": ACCEPT,
        "Accept-Encoding": ACCEPT_ENCODING,
        "Accept-Language": "en;q=1.0, *;q=0.5",
    }
    timeout = httpx.Timeout(READ_TIMEOUT, connect=CONNECT_TIMEOUT)
    for hop in range(MAX_REDIRECTS + 1):
        result.final_url = target.url
        transport = PinnedTransport(target, deadline)
        try:
            with (
                httpx.Client(
                    transport=traced_transport(transport),
                    trust_env=False,
                    follow_redirects=False,
                    timeout=timeout,
                ) as client,
                client.stream("GET", target.url, headers=headers) as response,
            ):
                result.address = transport.backend.connected_to
                result.http_status = response.status_code
                result.headers = response.headers
                location = response.headers.get("location")
                if response.status_code in REDIRECT_STATUSES and location:
                    result.redirects.append(
                        Hop(url=target.url, status=response.status_code, address=result.address)
                    )
                    next_url = urljoin(target.url, location.strip())
                else:
                    result.body, result.outcome = _read_body(response, max_bytes)
                    break
        except httpx.TimeoutException as exc:
            result.outcome, result.detail = "timeout", str(exc)
            break
        except httpx.TransportError as exc:
            if isinstance(exc, httpx.RemoteProtocolError) and transport.status in REDIRECT_STATUSES:
                # httpx builds the redirect's next request even when it does not follow it,
                # and raises this for a Location that is no URL ("http://[::1").
                raise redirect_refused(transport.location, target.url, str(exc)) from None
            result.http_status = transport.status or result.http_status
            result.outcome, result.detail = "connection_failed", str(exc)
            break
        except httpx.InvalidURL as exc:
            # httpx raises here for a Location it cannot parse (javascript:, data:, ...): a
            # redirect we will not follow is refused like a redirect to a blocked address.
            raise redirect_refused(transport.location, target.url, str(exc)) from None
        if hop == MAX_REDIRECTS:
            result.outcome = "too_many_redirects"
            break
        try:
            target = check_url(next_url)
        except InvalidURL as exc:
            # file:, gopher:, "http:\\host": nothing the caller paid to have fetched.
            raise redirect_refused(next_url, result.redirects[-1].url, str(exc)) from None
        except (HostNotFound, DnsUnavailable, BlockedAddress) as exc:
            exc.details["redirected_from"] = result.redirects[-1].url
            raise
        if before_hop is not None:
            before_hop(target)
    result.elapsed_ms = (time.monotonic() - started) * 1000
    return result


# --- APIs the operator configured (Crossref) ------------------------------------------
#
# Kept apart from ``fetch`` on purpose. The URL is the operator's setting
# (ATTEST_CROSSREF_URL), never a caller's, so the public-address rule, which keeps
# callers out of our network, does not apply: an operator may run a mirror on a
# private address, and tests a server on loopback. Everything else holds: the host
# is resolved once and the connection pinned to that address, one deadline bounds
# every read, the decoded body is capped, proxies in the environment are ignored,
# and no redirect is followed, so an answer cannot send us anywhere else.


def fetch_api(
    url: str, *, headers: dict[str, str], deadline_seconds: float, max_bytes: int
) -> FetchResult:
    """GET an operator-configured API URL once; the outcome says how it ended, never raises
    for the network (``connection_failed`` for a bad URL or an unresolvable host too)."""
    started = time.monotonic()
    deadline = started + deadline_seconds
    result = FetchResult(requested_url=url, final_url=url, outcome="ok")
    try:
        parsed = parse_url(url)
        target = Target(parsed=parsed, addresses=resolve(parsed))
    except (InvalidURL, HostNotFound) as exc:
        result.outcome, result.detail = "connection_failed", str(exc)
        return result
    transport = PinnedTransport(target, deadline)
    timeout = httpx.Timeout(deadline_seconds, connect=min(CONNECT_TIMEOUT, deadline_seconds))
    try:
        with (
            httpx.Client(
                transport=traced_transport(transport),
                trust_env=False,
                follow_redirects=False,
                timeout=timeout,
            ) as client,
            client.stream(
                "GET", parsed.url, headers={**headers, "Accept-Encoding": ACCEPT_ENCODING}
            ) as response,
        ):
            result.address = transport.backend.connected_to
            result.http_status = response.status_code
            result.headers = response.headers
            result.body, result.outcome = _read_body(response, max_bytes)
    except httpx.TimeoutException as exc:
        result.outcome, result.detail = "timeout", str(exc)
    except httpx.TransportError as exc:
        result.http_status = transport.status or result.http_status
        result.outcome, result.detail = "connection_failed", str(exc)
    result.elapsed_ms = (time.monotonic() - started) * 1000
    return result
