"""The guarded fetcher against real servers on loopback."""

from __future__ import annotations

import socket
import time
import tracemalloc
import zlib

import pytest

from tests.verification import dns_server as dns
from tests.verification.conftest import gzip_bomb, gzipped, page, redirect, send, trickle
from verification.network.addresses import parse_url
from verification.network.fetch import (
    ACCEPT_ENCODING,
    MAX_REDIRECTS,
    USER_AGENT,
    BlockedAddress,
    DnsUnavailable,
    HostNotFound,
    Target,
    check_url,
    fetch,
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_fetch_sends_our_user_agent_encodings_and_the_host_name(pages):
    pages.routes["/a"] = page("<p>hello</p>")
    result = fetch(check_url(f"http://localhost:{pages.port}/a"))
    assert result.outcome == "ok"
    assert result.http_status == 200
    assert result.body == b"<p>hello</p>"
    seen = pages.seen[-1].headers
    assert seen["User-Agent"] == USER_AGENT
    assert seen["Accept-Encoding"] == ACCEPT_ENCODING
    assert seen["Host"] == f"localhost:{pages.port}"
    assert result.address == "127.0.0.1"


def test_fetch_connects_to_the_checked_address_without_resolving_again(pages):
    # The name does not resolve anywhere; only the pinned address can serve it.
    pages.routes["/pinned"] = page("<p>pinned</p>")
    parsed = parse_url(f"http://pinned.invalid:{pages.port}/pinned")
    result = fetch(Target(parsed=parsed, addresses=("127.0.0.1",)))
    assert result.body == b"<p>pinned</p>"
    assert pages.seen[-1].headers["Host"] == f"pinned.invalid:{pages.port}"


def test_proxy_variables_in_the_environment_are_ignored(pages, canary, monkeypatch):
    monkeypatch.setenv("HTTP_PROXY", canary.url())
    monkeypatch.setenv("http_proxy", canary.url())
    monkeypatch.setenv("ALL_PROXY", canary.url())
    pages.routes["/direct"] = page("<p>direct</p>")
    assert fetch(check_url(pages.url("/direct"))).body == b"<p>direct</p>"
    assert canary.seen == []


def test_loopback_outside_the_allow_list_is_blocked_before_any_request(pages, canary):
    with pytest.raises(BlockedAddress) as refused:
        check_url(canary.url("/"))
    assert refused.value.status_code == 403
    assert refused.value.code == "blocked"
    assert refused.value.details["reason"] == "loopback"
    assert canary.seen == []


@pytest.mark.parametrize(
    "location",
    [
        "http://127.0.0.1:{port}/",
        "http://2130706433:{port}/",
        "http://0x7f.1:{port}/",
        "http://[::ffff:127.0.0.1]:{port}/",
        "http://localhost:{port}/",
    ],
)
def test_a_redirect_to_a_blocked_address_is_not_followed(pages, canary, location):
    pages.routes["/go"] = redirect(location.format(port=canary.port))
    with pytest.raises(BlockedAddress) as refused:
        fetch(check_url(pages.url("/go")))
    assert refused.value.details["redirected_from"] == pages.url("/go")
    assert canary.seen == []


def test_redirects_are_followed_up_to_five_hops(pages):
    for hop in range(1, MAX_REDIRECTS + 1):
        pages.routes[f"/r{hop}"] = redirect(
            f"/r{hop + 1}" if hop < MAX_REDIRECTS else "/final", 301
        )
    pages.routes["/final"] = page("<p>arrived</p>")
    result = fetch(check_url(pages.url("/r1")))
    assert result.outcome == "ok"
    assert result.body == b"<p>arrived</p>"
    assert result.final_url == pages.url("/final")
    assert [h.status for h in result.redirects] == [301] * MAX_REDIRECTS


def test_a_sixth_redirect_is_not_followed(pages):
    for hop in range(1, MAX_REDIRECTS + 2):
        pages.routes[f"/r{hop}"] = redirect(f"/r{hop + 1}")
    pages.routes[f"/r{MAX_REDIRECTS + 2}"] = page("<p>too far</p>")
    result = fetch(check_url(pages.url("/r1")))
    assert result.outcome == "too_many_redirects"
    assert f"/r{MAX_REDIRECTS + 2}" not in pages.paths()


@pytest.mark.parametrize(
    "location", ["javascript:alert(1)", "data:text/html,hi", "ftp://example.com/x", "http://[::1"]
)
def test_a_redirect_to_a_url_that_cannot_be_fetched_ends_the_fetch(pages, location):
    # httpx builds the next request itself and raises on such a Location; that must be
    # a failed fetch the caller can report, not an exception that becomes a 500.
    pages.routes["/odd"] = redirect(location)
    result = fetch(check_url(pages.url("/odd")))
    assert (result.outcome, result.http_status) == ("connection_failed", 302)
    assert pages.paths() == ["/odd"]


def test_every_redirect_hop_runs_the_hop_check(pages):
    pages.routes["/a"] = redirect("/b")
    pages.routes["/b"] = page("<p>b</p>")
    checked = []
    fetch(check_url(pages.url("/a")), before_hop=lambda target: checked.append(target.url))
    assert checked == [pages.url("/b")]


def test_a_trickling_body_stops_at_the_total_deadline(pages, settings):
    settings.ATTEST_FETCH_DEADLINE = 1.0
    pages.routes["/slow"] = trickle(interval=0.05)
    started = time.monotonic()
    result = fetch(check_url(pages.url("/slow")))
    elapsed = time.monotonic() - started
    assert result.outcome == "timeout"
    assert elapsed < 2.5


def test_trickling_headers_stop_at_the_total_deadline(pages, settings):
    settings.ATTEST_FETCH_DEADLINE = 1.0
    pages.routes["/slow-headers"] = trickle(interval=0.05, in_headers=True)
    started = time.monotonic()
    result = fetch(check_url(pages.url("/slow-headers")))
    assert result.outcome == "timeout"
    assert time.monotonic() - started < 2.5


def test_a_gzip_bomb_stops_at_the_byte_cap_and_memory_stays_low(pages, settings):
    cap = 1024 * 1024
    settings.ATTEST_FETCH_MAX_BYTES = cap
    bomb = gzip_bomb(256 * 1024 * 1024)
    assert len(bomb) < 1024 * 1024
    pages.routes["/bomb"] = page(bomb, headers={"Content-Encoding": "gzip"})
    tracemalloc.start()
    try:
        result = fetch(check_url(pages.url("/bomb")))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.outcome == "too_large"
    assert len(result.body) == cap
    assert peak < 8 * cap


def test_an_identity_body_over_the_cap_is_too_large(pages, settings):
    settings.ATTEST_FETCH_MAX_BYTES = 1000
    pages.routes["/big"] = page(b"x" * 5000, content_type="text/plain")
    assert fetch(check_url(pages.url("/big"))).outcome == "too_large"


@pytest.mark.parametrize(
    ("encoding", "encode"),
    [
        ("gzip", gzipped),
        ("deflate", zlib.compress),
        ("deflate", lambda data: zlib.compress(data)[2:-4]),  # raw deflate, as some servers send
    ],
)
def test_compressed_bodies_are_decoded(pages, encoding, encode):
    body = "<p>compressed text \u2013 with a dash</p>".encode()
    pages.routes["/z"] = page(encode(body), headers={"Content-Encoding": encoding})
    result = fetch(check_url(pages.url("/z")))
    assert result.outcome == "ok"
    assert result.body == body


def test_an_encoding_we_did_not_ask_for_is_refused(pages):
    pages.routes["/br"] = page(b"\x1b\x00\x00", headers={"Content-Encoding": "br"})
    assert fetch(check_url(pages.url("/br"))).outcome == "bad_encoding"


def test_a_refused_connection_is_reported_not_raised(settings):
    port = _free_port()
    settings.ATTEST_FETCH_ALLOW = frozenset({("127.0.0.1", port)})
    result = fetch(check_url(f"http://127.0.0.1:{port}/"))
    assert result.outcome == "connection_failed"
    assert result.http_status is None


def test_a_host_that_does_not_resolve_is_host_not_found(dns_server):
    # The loopback DNS server (dns_server) answers NXDOMAIN: no query leaves the machine.
    with pytest.raises(HostNotFound) as missing:
        check_url("http://no-such-host.invalid/")
    assert missing.value.status_code == 422
    assert missing.value.code == "host_not_found"


def test_the_status_and_headers_of_an_error_page_are_kept(pages):
    pages.routes["/gone"] = lambda h: send(h, 410, b"<p>gone</p>", {"X-Why": "removed"})
    result = fetch(check_url(pages.url("/gone")))
    assert result.http_status == 410
    assert result.headers["x-why"] == "removed"
    assert result.body == b"<p>gone</p>"


def _self_signed(tmp_path, name: str) -> tuple[str, str]:
    from datetime import UTC, datetime, timedelta

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return str(cert_path), str(key_path)


def test_tls_to_a_pinned_address_sends_the_host_name_and_verifies_the_certificate(tmp_path):
    import ssl
    import threading

    name = "attest-sni.invalid"
    cert, key = _self_signed(tmp_path, name)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server_names: list[str | None] = []
    context.sni_callback = lambda sock, server_name, ctx: server_names.append(server_name)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]

    def accept_one() -> None:
        conn, _ = listener.accept()
        try:
            context.wrap_socket(conn, server_side=True).close()
        except (ssl.SSLError, OSError):
            pass  # the client refuses our self-signed certificate, as it should
        finally:
            listener.close()

    threading.Thread(target=accept_one, daemon=True).start()
    parsed = parse_url(f"https://{name}:{port}/")
    result = fetch(Target(parsed=parsed, addresses=("127.0.0.1",)), deadline_seconds=5)
    assert server_names == [name]
    assert result.outcome == "connection_failed"
    assert "CERTIFICATE_VERIFY_FAILED" in result.detail


@pytest.mark.parametrize("failure", [dns.SERVFAIL, dns.REFUSED, dns.SILENT])
def test_a_resolver_that_fails_or_times_out_is_dns_unavailable_not_host_not_found(
    dns_server, failure
):
    dns_server.answers["flaky.example"] = failure
    with pytest.raises(DnsUnavailable) as unavailable:
        check_url("http://flaky.example/page")
    assert (unavailable.value.status_code, unavailable.value.code) == (503, "dns_unavailable")
    assert unavailable.value.retry_after > 0
    assert unavailable.value.details["host"] == "flaky.example"
    assert "flaky.example" in dns_server.queries


def test_a_name_the_resolver_says_does_not_exist_is_host_not_found(dns_server):
    with pytest.raises(HostNotFound):
        check_url("http://nothing-here.example/page")
    assert "nothing-here.example" in dns_server.queries


def test_a_name_the_resolver_answers_is_checked_like_any_other(dns_server):
    dns_server.answers["inside.example"] = "10.1.2.3"
    with pytest.raises(BlockedAddress) as refused:
        check_url("http://inside.example/page")
    assert refused.value.details == {"host": "inside.example", "reason": "private"}
