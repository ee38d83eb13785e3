"""A real DNS server (dnslib) on a free loopback UDP port whose A answers change from query to query.

``answers("hook.example", ["127.0.0.1", "127.0.0.1", "127.0.0.2"])``: the first A query gets the
first address, the second the second, and every later one the last, as a rebinding attacker's
zone would. Every A query is counted; AAAA queries get an empty answer.
"""

from __future__ import annotations

import threading

from dnslib import QTYPE, RCODE, RR, A, DNSRecord
from dnslib.server import BaseResolver, DNSHandler, DNSLogger, DNSServer


class _ChangingResolver(BaseResolver):
    def __init__(self) -> None:
        self.sequences: dict[str, list[str]] = {}
        self.queries: dict[str, int] = {}
        self.lock = threading.Lock()

    def resolve(self, request: DNSRecord, handler: DNSHandler) -> DNSRecord:
        reply = request.reply()
        name = str(request.q.qname).rstrip(".").lower()
        with self.lock:
            sequence = self.sequences.get(name)
            if sequence is None:
                reply.header.rcode = RCODE.NXDOMAIN
                return reply
            if request.q.qtype != QTYPE.A:
                return reply  # no AAAA record: an empty answer
            count = self.queries[name] = self.queries.get(name, 0) + 1
            address = sequence[min(count, len(sequence)) - 1]
        reply.add_answer(RR(request.q.qname, QTYPE.A, rdata=A(address), ttl=0))
        return reply


class RebindingDns:
    def __init__(self) -> None:
        quiet = DNSLogger(log="-request,-reply,-truncated,-error,-recv,-send,-data", prefix=False)
        self._resolver = _ChangingResolver()
        self._server = DNSServer(self._resolver, address="127.0.0.1", port=0, logger=quiet)

    @property
    def address(self) -> str:
        """``ip:port``, the form settings.dns_nameservers takes."""
        host, port = self._server.server.server_address[:2]
        return f"{host}:{port}"

    def answers(self, name: str, addresses: list[str]) -> None:
        with self._resolver.lock:
            self._resolver.sequences[name.lower()] = list(addresses)
            self._resolver.queries[name.lower()] = 0

    def queries(self, name: str) -> int:
        with self._resolver.lock:
            return self._resolver.queries.get(name.lower(), 0)

    def __enter__(self) -> RebindingDns:
        self._server.start_thread()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.stop()
        self._server.server.server_close()
