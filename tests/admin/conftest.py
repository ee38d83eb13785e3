"""Fixtures of the admin and webhook tests: a real HTTP receiver on a free loopback port."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
from fastapi import FastAPI

from agent_server.admin.wiring import AdminServices, admin_services
from agent_server.foundation.clock import ManualClock
from agent_server.foundation.settings import Settings
from agent_server.gateway import repository as gateway_repo
from agent_server.gateway.tokens import TokenService, signing_secret
from http_facade.app import create_app
from tests.conftest import BASE_URL, running


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> dict:
        return json.loads(self.body)


@dataclass
class Receiver:
    """Answers with the queued statuses in order (200 once the queue is empty) and records requests."""

    server: ThreadingHTTPServer
    statuses: list[int] = field(default_factory=list)
    headers: dict[int, dict[str, str]] = field(default_factory=dict)
    requests: list[Received] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def respond(self, *statuses: int, headers: dict[str, str] | None = None) -> None:
        self.statuses.extend(statuses)
        for status in statuses:
            self.headers[status] = headers or {}


def _handler(receiver: Receiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            body = self.rfile.read(length)
            receiver.requests.append(
                Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
            )
            status = receiver.statuses.pop(0) if receiver.statuses else 200
            self.send_response(status)
            for name, value in receiver.headers.get(status, {}).items():
                self.send_header(name, value)
            self.send_header("content-length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args: object) -> None:
            pass

    return Handler


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    rec = Receiver(server)
    server.RequestHandlerClass = _handler(rec)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield rec
    server.shutdown()
    server.server_close()


# --- the app with tenants, users and tokens --------------------------------------------------


@dataclass
class World:
    """Tenants A and B (professional), a platform tenant P, their users and tokens, over ASGI."""

    app: FastAPI
    client: httpx.AsyncClient
    clock: ManualClock
    settings: Settings
    tenants: dict[str, str]
    users: dict[str, str]
    tokens: dict[str, str]

    def auth(self, who: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[who]}"}

    @property
    def admin(self) -> AdminServices:
        return admin_services(self.app.state.services)


USERS = {  # name: (tenant, permissions)
    "a_admin": ("a", ["tenant:admin"]),
    "a_member": ("a", ["tenant:member"]),
    "b_admin": ("b", ["tenant:admin"]),
    "platform": ("p", ["platform:admin", "tenant:admin"]),
}


async def populate(app: FastAPI, clock: ManualClock) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    services, gateway = app.state.services, app.state.gateway
    tenants = {}
    for short, name, plan in (
        ("a", "Alpha", "professional"),
        ("b", "Beta", "professional"),
        ("p", "Ops", "enterprise"),
    ):
        tenants[short] = (await gateway_repo.create_tenant(services.db, clock.now(), name, plan)).id
    users, tokens = {}, {}
    for who, (short, permissions) in USERS.items():
        role = "owner" if "tenant:admin" in permissions else None  # each tenant's admin owns it
        user = gateway_repo.new_user(
            clock.now(), tenants[short], f"{who}@example.com", "not-a-hash", permissions, role
        )
        await gateway_repo.add_user(services.db, user)
        users[who] = user.id
        tokens[who] = gateway.tokens.issue(user.id, tenants[short], permissions)[0]
    old = gateway.tokens
    past = TokenService(
        signing_secret(services.settings),
        issuer=old.issuer,
        audience=old.audience,
        ttl=60,
        clock=ManualClock(clock.now() - 3600),
    )
    tokens["expired"] = past.issue(users["a_admin"], tenants["a"], ["tenant:admin"])[0]
    return tenants, users, tokens


def admin_settings(settings: Settings, **changes: object) -> Settings:
    return settings.model_copy(update={"webhook_worker": False, **changes})


@pytest.fixture
async def world(settings: Settings) -> AsyncIterator[World]:
    clock = ManualClock(start=time.time())  # near real time: the reference verifier checks the window
    settings = admin_settings(settings)
    async with running(create_app(settings, clock=clock)) as app:
        tenants, users, tokens = await populate(app, clock)
        transport = httpx.ASGITransport(app)
        async with httpx.AsyncClient(transport=transport, base_url=BASE_URL) as client:
            yield World(app, client, clock, settings, tenants, users, tokens)
