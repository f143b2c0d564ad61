"""A real DNS server on loopback, and the system resolver pointed at it for one test.

The fetcher resolves with ``socket.getaddrinfo``; dnspython's
``override_system_resolver`` makes that call a real stub resolver sending real
queries to this server, so a test can make a name fail, time out or not exist
without touching the machine's resolver or the internet.
"""

from __future__ import annotations

import socket
import threading

import dns.flags
import dns.message
import dns.rcode
import dns.resolver
import dns.rrset

NXDOMAIN = "nxdomain"
SERVFAIL = "servfail"
REFUSED = "refused"
SILENT = "silent"  # never answers: the resolver times out


class DnsServer:
    """Answers each name as ``answers`` says: an IPv4 address, or one of the failures above."""

    def __init__(self) -> None:
        self.answers: dict[str, str] = {}
        self.queries: list[str] = []
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._socket.bind(("127.0.0.1", 0))
        self.port = self._socket.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                data, peer = self._socket.recvfrom(4096)
            except OSError:
                return  # closed
            query = dns.message.from_wire(data)
            question = query.question[0]
            name = question.name.to_text(omit_final_dot=True).lower()
            self.queries.append(name)
            behaviour = self.answers.get(name, NXDOMAIN)
            if behaviour == SILENT:
                continue
            response = dns.message.make_response(query)
            response.flags |= dns.flags.RA
            if behaviour == NXDOMAIN:
                response.set_rcode(dns.rcode.NXDOMAIN)
            elif behaviour == SERVFAIL:
                response.set_rcode(dns.rcode.SERVFAIL)
            elif behaviour == REFUSED:
                response.set_rcode(dns.rcode.REFUSED)
            elif question.rdtype == dns.rdatatype.A:
                response.answer.append(dns.rrset.from_text(question.name, 60, "IN", "A", behaviour))
            self._socket.sendto(response.to_wire(), peer)

    def resolver(self) -> dns.resolver.Resolver:
        resolver = dns.resolver.Resolver(configure=False)
        resolver.nameservers = ["127.0.0.1"]
        resolver.port = self.port
        resolver.timeout = resolver.lifetime = 1.0
        resolver.cache = None
        return resolver

    def close(self) -> None:
        self._socket.close()
