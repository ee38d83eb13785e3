"""The dashboard's test world: an app on a ManualClock, people in tenants, browsers that keep cookies.

A ``browser()`` is an httpx client over ASGI with a browser's Accept header; it keeps the cookies the
app sets (the session under /app, the CSRF nonce), as a browser would. ``sign_in`` uses the sign-in
form like a person; ``post_form`` reads the CSRF token from the page that holds the form first.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
from fastapi import FastAPI

from agent_server.foundation.clock import ManualClock
from agent_server.foundation.settings import Settings
from agent_server.gateway import repository as repo
from http_facade.app import create_app
from tests.conftest import BASE_URL, running
from tests.gateway.conftest import PASSWORD, password_hash
from tests.pages.conftest import BROWSER_ACCEPT, BROWSER_UA

LOCALHOST = BASE_URL.replace("127.0.0.1", "localhost")
CSRF = re.compile(r'name="csrf_token" value="([0-9a-f]{64})"')


def csrf_of(html: str) -> str:
    match = CSRF.search(html)
    assert match, "no CSRF token on the page"
    return match.group(1)


@dataclass(frozen=True)
class Person:
    email: str
    user_id: str
    tenant_id: str


@dataclass
class Dash:
    app: FastAPI
    clock: ManualClock
    settings: Settings
    clients: list[httpx.AsyncClient] = field(default_factory=list)

    def browser(
        self, ip: str = "10.0.0.1", cookies: dict[str, str] | None = None, base_url: str = BASE_URL
    ) -> httpx.AsyncClient:
        """A new browser (closed when the test ends), optionally with ``cookies`` set for /app; at
        ``base_url`` (``LOCALHOST``: where passkeys work, browsers refuse them on an IP address)."""
        transport = httpx.ASGITransport(self.app, client=(ip, 5555))
        headers = {"Accept": BROWSER_ACCEPT, "User-Agent": BROWSER_UA}
        # Production cookies are Secure, which a client sends over https only: an https app is reached so.
        if self.settings.public_base_url.startswith("https:") and base_url == BASE_URL:
            base_url = self.settings.public_base_url
        client = httpx.AsyncClient(transport=transport, base_url=base_url, headers=headers)
        for name, value in (cookies or {}).items():
            client.cookies.set(name, value, domain="127.0.0.1", path="/app")
        self.clients.append(client)
        return client

    async def person(
        self, plan: str = "professional", permissions: tuple[str, ...] = ("tenant:admin",)
    ) -> Person:
        db, now = self.app.state.services.db, self.clock.now()
        name = f"org-{uuid.uuid4().hex[:8]}"
        tenant = await repo.create_tenant(db, now, name, plan)
        user = repo.new_user(
            now, tenant.id, f"admin@{name}.example", await password_hash(), list(permissions)
        )
        await repo.add_user(db, user)
        return Person(user.email, user.id, tenant.id)

    async def signed_in(
        self, person: Person, ip: str = "10.0.0.1", base_url: str = BASE_URL
    ) -> httpx.AsyncClient:
        browser = self.browser(ip, base_url=base_url)
        answer = await post_form(browser, "/app/login", "/app/login", email=person.email, password=PASSWORD)
        assert answer.status_code == 303 and answer.headers["location"] == "/app", answer.text[:500]
        return browser


async def post_form(client: httpx.AsyncClient, page: str, target: str, /, **fields: Any) -> httpx.Response:
    """GET ``page``, then POST ``fields`` to ``target`` with the CSRF token of that page."""
    shown = await client.get(page)
    assert shown.status_code == 200, (page, shown.status_code, shown.text[:300])
    return await client.post(target, data={"csrf_token": csrf_of(shown.text), **fields})


@asynccontextmanager
async def dashboard_world(settings: Settings, **changes: Any) -> AsyncIterator[Dash]:
    """The app for a test (its fixture: ``async with dashboard_world(settings) as world: yield world``)."""
    clock = ManualClock(start=time.time())  # near real time: passkeys and providers check their windows
    settings = settings.model_copy(update={"mail_worker": False, "webhook_worker": False, **changes})
    async with running(create_app(settings, clock=clock)) as app:
        world = Dash(app, clock, settings)
        yield world
        for client in world.clients:
            await client.aclose()
