"""A real DNS server (dnslib) on a free loopback UDP port, answering TXT records the test publishes.

Use it as a context manager (``with LoopbackDns() as dns``) or through the ``dns_server`` fixture,
then point the app at it with ``Settings(dns_nameservers=[dns.address])``. Unknown names answer
NXDOMAIN, like a real zone; ``fail()`` makes every answer SERVFAIL.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from dnslib import QTYPE, RCODE, RR, TXT, DNSRecord
from dnslib.server import BaseResolver, DNSHandler, DNSLogger, DNSServer


class _TxtResolver(BaseResolver):
    def __init__(self, records: dict[str, list[str]], lock: threading.Lock) -> None:
        self.records, self.lock = records, lock
        self.failing = False

    def resolve(self, request: DNSRecord, handler: DNSHandler) -> DNSRecord:
        reply = request.reply()
        name = str(request.q.qname).rstrip(".").lower()
        with self.lock:
            values = list(self.records.get(name, []))
        if self.failing:
            reply.header.rcode = RCODE.SERVFAIL
        elif not values:
            reply.header.rcode = RCODE.NXDOMAIN
        elif request.q.qtype == QTYPE.TXT:
            for value in values:
                reply.add_answer(RR(request.q.qname, QTYPE.TXT, rdata=TXT(value), ttl=60))
        return reply


class LoopbackDns:
    def __init__(self) -> None:
        self.records: dict[str, list[str]] = {}
        self._lock = threading.Lock()
        quiet = DNSLogger(log="-request,-reply,-truncated,-error,-recv,-send,-data", prefix=False)
        self._resolver = _TxtResolver(self.records, self._lock)
        self._server = DNSServer(self._resolver, address="127.0.0.1", port=0, logger=quiet)

    @property
    def address(self) -> str:
        """``ip:port``, the form settings.dns_nameservers takes."""
        host, port = self._server.server.server_address[:2]
        return f"{host}:{port}"

    def publish(self, name: str, value: str) -> None:
        with self._lock:
            self.records.setdefault(name.rstrip(".").lower(), []).append(value)

    def fail(self, failing: bool = True) -> None:
        """Answer every query SERVFAIL, as a broken zone does."""
        self._resolver.failing = failing

    def __enter__(self) -> LoopbackDns:
        self._server.start_thread()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.stop()
        self._server.server.server_close()


@pytest.fixture
def dns_server() -> Iterator[LoopbackDns]:
    with LoopbackDns() as server:
        yield server
