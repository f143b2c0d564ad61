"""The address checker as a table: what may be fetched and why not."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from verification.network.addresses import (
    REASON_WORDS,
    InvalidURL,
    address_problem,
    is_public_address,
    parse_url,
)


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("127.0.0.1", "loopback"),
        ("127.8.9.10", "loopback"),
        ("10.0.0.1", "private"),
        ("172.16.5.4", "private"),
        ("192.168.1.1", "private"),
        ("169.254.169.254", "metadata"),
        ("169.254.1.1", "link_local"),
        ("100.64.0.1", "shared_address_space"),
        ("100.100.100.200", "metadata"),
        ("0.0.0.0", "unspecified"),
        ("224.0.0.1", "multicast"),
        ("240.0.0.1", "private"),
        ("255.255.255.255", "private"),
        ("192.0.2.10", "private"),
        ("::1", "loopback"),
        ("::", "unspecified"),
        ("::ffff:127.0.0.1", "loopback"),
        ("::ffff:10.1.2.3", "private"),
        ("::ffff:169.254.169.254", "metadata"),
        ("64:ff9b::7f00:1", "loopback"),
        ("64:ff9b::a9fe:a9fe", "metadata"),
        ("64:ff9b:1::a00:1", "private"),
        ("2002:7f00:1::1", "loopback"),
        ("2002:a00:1::1", "private"),
        ("2001:0:4136:e378:8000:63bf:80ff:fffe", "loopback"),
        ("fd00:ec2::254", "metadata"),
        ("fd12:3456::1", "private"),
        ("fe80::1", "link_local"),
        ("ff02::1", "multicast"),
        ("fec0::1", "site_local"),
        ("2001:db8::1", "private"),
    ],
)
def test_non_public_addresses_are_refused_with_a_reason(address, reason):
    assert REASON_WORDS[reason]  # every reason can be said in words, without the address
    assert address_problem(address) == reason
    assert not is_public_address(address)


@pytest.mark.parametrize(
    "address",
    [
        "93.184.215.14",
        "1.1.1.1",
        "8.8.8.8",
        "2606:4700:4700::1111",
        "2002:5db8:d70e::1",
        "64:ff9b::808:808",
        "::ffff:8.8.8.8",
    ],
)
def test_public_addresses_pass(address):
    assert is_public_address(address)


@pytest.mark.parametrize(
    ("url", "host", "reason"),
    [
        ("http://2130706433/", "127.0.0.1", "loopback"),
        ("http://0x7f.1/", "127.0.0.1", "loopback"),
        ("http://0x7f000001/", "127.0.0.1", "loopback"),
        ("http://0177.0.0.1/", "127.0.0.1", "loopback"),
        ("http://127.1/", "127.0.0.1", "loopback"),
        ("http://10.1/", "10.0.0.1", "private"),
        ("http://0xa9.0xfe.0xa9.0xfe/latest/meta-data/", "169.254.169.254", "metadata"),
        ("http://[::ffff:7f00:1]/", "::ffff:7f00:1", "loopback"),
        ("http://[64:ff9b::7f00:1]:8080/", "64:ff9b::7f00:1", "loopback"),
        ("http://127.0.0.1./", "127.0.0.1", "loopback"),
    ],
)
def test_numeric_url_hosts_are_canonicalised_before_the_check(url, host, reason):
    parsed = parse_url(url)
    assert parsed.host == host
    assert parsed.ip is not None
    assert address_problem(parsed.ip) == reason


def test_url_host_is_lowercased_and_idna_encoded():
    parsed = parse_url("https://Bücher.Example/Pfad?q=1")
    assert parsed.host == "xn--bcher-kva.example"
    assert parsed.port == 443
    assert parsed.target == "/Pfad?q=1"
    assert parsed.url == "https://xn--bcher-kva.example/Pfad?q=1"


@pytest.mark.parametrize(
    "url",
    [
        "ftp://example.org/file",
        "file:///etc/passwd",
        "javascript:alert(1)",
        "http:///nohost",
        "http://256.1.1.1/",
        "http://1.2.3.4.5/",
        "http://0x100000000/",
        "http://[fe80::1%25eth0]/",
        "http://exa<mple.org/",
        "http://a*b/",
        "http://*.example.org/",
        "http://a..b/",
        "http://exa!mple.org/",
        "http://" + "a" * 64 + ".example/",
        "https://example.org:99999/",
        "https://example.org/" + "a" * 2030,
    ],
)
def test_urls_that_cannot_be_fetched_are_invalid(url):
    with pytest.raises(InvalidURL):
        parse_url(url)


def test_a_url_of_exactly_2048_characters_is_accepted():
    url = "https://example.org/" + "a" * (2048 - len("https://example.org/"))
    assert len(url) == 2048
    assert parse_url(url).host == "example.org"


def test_the_origin_leaves_out_a_default_port():
    assert parse_url("https://Example.org:443/a?b").origin == "https://example.org"
    assert parse_url("http://[::1]:8080/").origin == "http://[::1]:8080"


@given(
    st.integers(min_value=0, max_value=2**32 - 1), st.sampled_from(["dec", "hex", "dotted-octal"])
)
def test_every_numeric_spelling_of_an_ipv4_address_canonicalises_to_it(value, form):
    address = ipaddress.IPv4Address(value)
    if form == "dec":
        host = str(value)
    elif form == "hex":
        host = hex(value)
    else:
        host = ".".join(f"0{int(octet):o}" for octet in str(address).split("."))
    parsed = parse_url(f"http://{host}/")
    assert parsed.ip == address
    assert parsed.host == str(address)
    assert is_public_address(parsed.ip) == is_public_address(address)
