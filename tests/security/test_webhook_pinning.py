"""Webhook delivery connects to the address the guard checked, with no second DNS look-up between
check and connect, against a real DNS server whose answer changes from one query to the next."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from agent_server.foundation.clock import ManualClock
from agent_server.foundation.settings import Settings
from http_facade.app import create_app
from tests.admin.conftest import Receiver, _handler, admin_settings, populate
from tests.conftest import BASE_URL, running
from tests.security.dns_rebinding import RebindingDns

HOST = "hook.rebind.example"


@contextmanager
def receivers() -> Iterator[tuple[Receiver, Receiver]]:
    """Two receivers on one port: 127.0.0.1 (the checked address) and 127.0.0.2 (the rebound one)."""
    for _ in range(20):
        first = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
        try:
            second = ThreadingHTTPServer(("127.0.0.2", first.server_address[1]), BaseHTTPRequestHandler)
        except OSError:  # that port is taken on 127.0.0.2: try another
            first.server_close()
            continue
        break
    else:
        pytest.fail("no port free on both 127.0.0.1 and 127.0.0.2")
    pair = (Receiver(first), Receiver(second))
    threads = []
    for receiver in pair:
        receiver.server.RequestHandlerClass = _handler(receiver)
        threads.append(threading.Thread(target=receiver.server.serve_forever, args=(0.05,), daemon=True))
        threads[-1].start()
    try:
        yield pair
    finally:
        for receiver in pair:
            receiver.server.shutdown()
            receiver.server.server_close()


@dataclass
class Admin:
    client: httpx.AsyncClient
    headers: dict[str, str]

    async def webhook(self, url: str) -> dict[str, Any]:
        created = await self.client.post(
            "/admin/webhooks", json={"url": url, "events": ["key.rotated"]}, headers=self.headers
        )
        assert created.status_code == 201, created.text
        return created.json()

    async def ping(self, hook: dict[str, Any]) -> dict[str, Any]:
        answer = await self.client.post(f"/admin/webhooks/{hook['id']}/test", headers=self.headers)
        assert answer.status_code == 200, answer.text
        return answer.json()


@pytest.fixture
def dns() -> Iterator[RebindingDns]:
    with RebindingDns() as server:
        yield server


@pytest.fixture
async def admin(settings: Settings, dns: RebindingDns) -> AsyncIterator[Admin]:
    clock = ManualClock()
    app = create_app(admin_settings(settings, dns_nameservers=[dns.address]), clock=clock)
    async with running(app):
        _, _, tokens = await populate(app, clock)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url=BASE_URL) as client:
            yield Admin(client, {"Authorization": f"Bearer {tokens['a_admin']}"})


async def test_delivery_connects_to_the_checked_address_without_a_second_lookup(
    admin: Admin, dns: RebindingDns
) -> None:
    with receivers() as (checked, rebound):
        # 1st query: registration; 2nd: the delivery's check; any later one: the rebound address.
        dns.answers(HOST, ["127.0.0.1", "127.0.0.1", "127.0.0.2"])
        hook = await admin.webhook(f"http://{HOST}:{checked.server.server_address[1]}/hook")
        result = await admin.ping(hook)
        assert result["delivered"] is True, result
        assert len(checked.requests) == 1 and rebound.requests == []
        assert dns.queries(HOST) == 2  # one per check: the connection itself asked nothing

        # The next delivery checks again and goes where that check said.
        assert (await admin.ping(hook))["delivered"] is True
        assert len(checked.requests) == 1 and len(rebound.requests) == 1
        assert dns.queries(HOST) == 3


async def test_a_host_rebound_to_a_private_address_is_refused_at_delivery(
    admin: Admin, dns: RebindingDns
) -> None:
    with receivers() as (checked, rebound):
        dns.answers(HOST, ["127.0.0.1", "10.0.0.7"])  # public enough at registration, private later
        hook = await admin.webhook(f"http://{HOST}:{checked.server.server_address[1]}/hook")
        result = await admin.ping(hook)
        assert result["delivered"] is False and result["status_code"] is None
        assert "10.0.0.7 is a private address" in result["error"]
        assert checked.requests == [] and rebound.requests == []
