"""The caller's IP address: the socket's, unless a trusted proxy vouches for another."""

from __future__ import annotations

import ipaddress

from django.conf import settings
from django.http import HttpRequest


def _trusted(address: str) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in network for network in settings.ATTEST_TRUSTED_PROXIES)


def client_ip(request: HttpRequest) -> str:
    """Walk X-Forwarded-For from the right while the hop is a trusted proxy; "" if unknown.

    The rightmost untrusted hop is the first address no proxy of ours added, so a client
    cannot buy a fresh trial budget by sending its own X-Forwarded-For.
    """
    address = request.META.get("REMOTE_ADDR", "")
    try:
        ipaddress.ip_address(address)
    except ValueError:
        # A Unix socket or an odd server gives no address: the caller is unknown, and the
        # ledger's IP columns cannot store whatever text stands in for one.
        return ""
    if not _trusted(address):
        return address
    hops = [hop.strip() for hop in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")]
    for hop in reversed([hop for hop in hops if hop]):
        try:
            ipaddress.ip_address(hop)
        except ValueError:
            break
        address = hop
        if not _trusted(hop):
            break
    return address
