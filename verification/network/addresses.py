"""Pure checks on URL hosts and IP addresses: what may be fetched and what may not."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import TypeGuard
from urllib.parse import urlsplit, urlunsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

MAX_URL_LENGTH = 2048

# Cloud instance-metadata endpoints. Most already fall in a blocked range; naming them
# keeps the refusal reason precise and survives a future change of the ranges below.
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",  # AWS, GCP, Azure, OpenStack
        "169.254.170.2",  # AWS ECS task metadata
        "100.100.100.200",  # Alibaba Cloud
        "192.0.0.192",  # Oracle Cloud
        "fd00:ec2::254",  # AWS over IPv6
    )
)
SHARED_ADDRESS_SPACE = ipaddress.ip_network("100.64.0.0/10")  # RFC 6598 carrier-grade NAT
NAT64_WELL_KNOWN = ipaddress.ip_network("64:ff9b::/96")  # RFC 6052
NAT64_LOCAL_USE = ipaddress.ip_network("64:ff9b:1::/48")  # RFC 8215

# WHATWG forbidden host code points, plus controls: such a host is not a URL host at all.
_FORBIDDEN_HOST = re.compile(r"[\x00-\x20#%/:<>?@\[\\\]^|\x7f]")
# What a resolver can look up: dot-separated labels of 1 to 63 letters, digits, hyphens
# (and the underscores some real names carry). Anything else ("a*b", "a..b") is refused
# before DNS is asked at all.
_DNS_NAME = re.compile(r"[a-z0-9_-]{1,63}(?:\.[a-z0-9_-]{1,63})*")
MAX_HOST_LENGTH = 253


class InvalidURL(ValueError):
    """The URL cannot be fetched as written (scheme, length, host)."""


@dataclass(frozen=True)
class ParsedURL:
    """A URL with its host in the canonical form a resolver would use."""

    url: str
    scheme: str
    host: str  # lower-case ASCII name, dotted IPv4, or bare IPv6 (no brackets)
    port: int
    target: str  # path and query, as sent on the request line
    ip: IPAddress | None  # set when the host is an IP literal

    @property
    def origin(self) -> str:
        default = self.port == (443 if self.scheme == "https" else 80)
        port = "" if default else f":{self.port}"
        return f"{self.scheme}://{_host_for_url(self.host, self.ip)}{port}"


def _parse_ipv4_part(part: str) -> int | None:
    if part[:2].lower() == "0x":
        digits, base = part[2:], 16
        if digits == "":
            return 0
    elif len(part) > 1 and part.startswith("0"):
        digits, base = part[1:], 8
    else:
        digits, base = part, 10
    try:
        return int(digits, base) if digits and digits.isalnum() else None
    except ValueError:
        return None


def _all_numbers(parts: list[int | None]) -> TypeGuard[list[int]]:
    return not any(n is None for n in parts)


def canonical_ipv4(host: str) -> ipaddress.IPv4Address | None:
    """Read the numeric IPv4 forms a resolver accepts (``2130706433``, ``0x7f.1``, ``0177.0.0.1``).

    Follows the WHATWG URL host parser, so the address we check is the one a
    browser or ``inet_aton`` would connect to. Returns None for a domain name;
    raises InvalidURL for a host that ends in a number but is not an address.
    """
    parts = host.split(".")
    if len(parts) > 1 and parts[-1] == "":
        parts.pop()
    if not parts or _parse_ipv4_part(parts[-1]) is None:
        return None
    numbers = [_parse_ipv4_part(p) if p else None for p in parts]
    if len(parts) > 4 or not _all_numbers(numbers):
        raise InvalidURL("The host looks like an IPv4 address but is not a valid one.")
    *head, last = numbers
    if any(n > 255 for n in head) or last >= 256 ** (5 - len(numbers)):
        raise InvalidURL("The host looks like an IPv4 address but a part is out of range.")
    value = last
    for index, n in enumerate(head):
        value += n * 256 ** (3 - index)
    return ipaddress.IPv4Address(value)


def _host_for_url(host: str, ip: IPAddress | None) -> str:
    return f"[{host}]" if isinstance(ip, ipaddress.IPv6Address) else host


def _ipv6_host(raw_host: str) -> tuple[str, IPAddress]:
    """A bracketed host: an IPv6 literal without a zone, compressed."""
    try:
        ip = ipaddress.IPv6Address(raw_host)
    except ValueError:
        raise InvalidURL("The host is not a valid IPv6 address.") from None
    if ip.scope_id:
        raise InvalidURL("IPv6 zone identifiers are not allowed.")
    return ip.compressed, ip


def _named_host(raw_host: str) -> tuple[str, IPAddress | None]:
    """Any other host: an IPv4 address in any form, or a DNS name (IDNA-encoded, lower case)."""
    if _FORBIDDEN_HOST.search(raw_host):
        raise InvalidURL("The host contains characters a URL host may not contain.")
    try:
        host = (
            raw_host.encode("idna").decode("ascii").lower()
            if not raw_host.isascii()
            else raw_host.lower()
        )
    except UnicodeError:
        raise InvalidURL("The host is not a valid internationalised domain name.") from None
    ip: IPAddress | None = None
    ipv4 = canonical_ipv4(host)
    if ipv4 is not None:
        ip, host = ipv4, str(ipv4)
    host = host.rstrip(".") if ip is None else host
    if not host:
        raise InvalidURL("The URL has no host.")
    if ip is None and (len(host) > MAX_HOST_LENGTH or not _DNS_NAME.fullmatch(host)):
        raise InvalidURL(
            "The host is not a valid host name (letters, digits and hyphens in labels "
            "of at most 63 characters, separated by dots)."
        )
    return host, ip


def parse_url(url: str) -> ParsedURL:
    """Validate an http(s) URL and canonicalise its host; raise InvalidURL otherwise."""
    if len(url) > MAX_URL_LENGTH:
        raise InvalidURL(f"The URL is longer than {MAX_URL_LENGTH} characters.")
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise InvalidURL(f"The URL cannot be parsed: {exc}.") from None
    scheme = parts.scheme.lower()
    if scheme not in {"http", "https"}:
        raise InvalidURL("Only http and https URLs can be fetched.")
    raw_host = parts.hostname or ""
    if not raw_host:
        raise InvalidURL("The URL has no host.")
    ip: IPAddress | None
    if parts.netloc.rpartition("@")[2].startswith("["):
        host, ip = _ipv6_host(raw_host)
    else:
        host, ip = _named_host(raw_host)
    port = port or (443 if scheme == "https" else 80)
    target = parts.path or "/"
    if parts.query:
        target += f"?{parts.query}"
    default_port = port == (443 if scheme == "https" else 80)
    netloc = _host_for_url(host, ip) + ("" if default_port else f":{port}")
    canonical = urlunsplit((scheme, netloc, parts.path or "/", parts.query, ""))
    return ParsedURL(url=canonical, scheme=scheme, host=host, port=port, target=target, ip=ip)


def embedded_ipv4(address: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address carries (mapped, 6to4, Teredo, NAT64)."""
    found: list[ipaddress.IPv4Address] = []
    if address.ipv4_mapped is not None:
        found.append(address.ipv4_mapped)
    if address.sixtofour is not None:
        found.append(address.sixtofour)
    if address.teredo is not None:
        found.extend(address.teredo)
    if address in NAT64_WELL_KNOWN or address in NAT64_LOCAL_USE:
        found.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    return found


# Each reason address_problem can give, in words a person reads in a refusal.
REASON_WORDS = {
    "metadata": "a cloud instance-metadata address",
    "unspecified": "the unspecified address",
    "loopback": "a loopback address (the server itself)",
    "link_local": "a link-local address",
    "multicast": "a multicast address",
    "shared_address_space": "a carrier-grade NAT address",
    "site_local": "a site-local IPv6 address",
    "private": "a private-network address",
    "reserved": "a reserved address",
    "not_global": "an address that is not on the public internet",
}


def _own_problem(address: IPAddress) -> str | None:
    if address in METADATA_ADDRESSES:
        return "metadata"
    if address.is_unspecified:
        return "unspecified"
    if address.is_loopback:
        return "loopback"
    if address.is_link_local:
        return "link_local"
    if address.is_multicast:
        return "multicast"
    if isinstance(address, ipaddress.IPv4Address) and address in SHARED_ADDRESS_SPACE:
        return "shared_address_space"
    if isinstance(address, ipaddress.IPv6Address) and address.is_site_local:
        return "site_local"
    if address.is_private:
        return "private"
    if address.is_reserved:
        return "reserved"
    if not address.is_global:
        return "not_global"
    return None


def address_problem(address: str | IPAddress) -> str | None:
    """Why an address may not be fetched (``loopback``, ``private``, ...), or None if public.

    An IPv6 address that embeds an IPv4 one is judged by both, so
    ``::ffff:127.0.0.1`` or ``64:ff9b::7f00:1`` cannot smuggle in loopback.
    """
    if isinstance(address, str):
        address = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(address, ipaddress.IPv6Address):
        inner_addresses = embedded_ipv4(address)
        for inner in inner_addresses:
            problem = _own_problem(inner)
            if problem is not None:
                return problem
        # Mapped and NAT64 addresses are only a wrapper: the packet goes to the IPv4 host.
        if address.ipv4_mapped is not None or address in NAT64_WELL_KNOWN:
            return None
    return _own_problem(address)


def is_public_address(address: str | IPAddress) -> bool:
    return address_problem(address) is None
