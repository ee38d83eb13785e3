"""The app side of the SSO tests: an app whose DNS is the loopback server, and SSO set-up helpers.

Tenants and their first admins are made through the repository (tests/gateway/conftest.py's
``Harness``); everything else goes over HTTP to the real app.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx

from agent_server.foundation.clock import ManualClock
from agent_server.foundation.settings import Settings
from http_facade.app import create_app
from tests.accounts.dns_server import LoopbackDns
from tests.accounts.oidc_provider.server import OidcProvider
from tests.conftest import BASE_URL, running
from tests.gateway.conftest import Harness, TenantAdmin

CALLBACK_URL = f"{BASE_URL}/sso/oidc/callback"


@asynccontextmanager
async def sso_app(data_dir: Path, dns: LoopbackDns, **changes: Any) -> AsyncIterator[Harness]:
    """An app over ASGI on a ManualClock that starts at the real time (the provider's tokens use it)."""
    wanted = {"redis_url": None, "database_url": None, "dns_nameservers": [dns.address], **changes}
    settings = Settings(data_dir=data_dir, public_base_url=BASE_URL, **wanted)
    clock = ManualClock(time.time())
    application = create_app(settings, clock=clock)
    async with (
        running(application),
        httpx.AsyncClient(transport=httpx.ASGITransport(application), base_url=BASE_URL) as client,
    ):
        yield Harness(application, client, clock)


async def verify_domain(h: Harness, admin: TenantAdmin, dns: LoopbackDns, domain: str) -> dict[str, Any]:
    """Claim ``domain``, publish its TXT record on the loopback DNS and verify it."""
    claimed = await h.client.post("/admin/sso/domains", json={"domain": domain}, headers=admin.headers)
    assert claimed.status_code in (200, 201), claimed.text
    record = claimed.json()["record"]
    dns.publish(record["name"], record["value"])
    verified = await h.client.post(f"/admin/sso/domains/{domain}/verify", headers=admin.headers)
    assert verified.status_code == 200, verified.text
    return verified.json()


async def connect(h: Harness, admin: TenantAdmin, provider: OidcProvider, **extra: Any) -> httpx.Response:
    body = {
        "issuer": provider.issuer,
        "client_id": provider.client_id,
        "client_secret": provider.client_secret,
    }
    return await h.client.put("/admin/sso/oidc", json={**body, **extra}, headers=admin.headers)


async def set_up_sso(
    h: Harness, admin: TenantAdmin, provider: OidcProvider, dns: LoopbackDns, domain: str
) -> None:
    await verify_domain(h, admin, dns, domain)
    saved = await connect(h, admin, provider)
    assert saved.status_code == 200, saved.text


async def start(h: Harness, tenant_id: str) -> str:
    started = await h.client.get(f"/sso/oidc/{tenant_id}/start")
    assert started.status_code == 302, started.text
    return started.headers["location"]


async def callback(h: Harness, url: str) -> httpx.Response:
    assert url.startswith(CALLBACK_URL), url
    return await h.client.get(url[len(BASE_URL) :])


async def sign_in(
    h: Harness, provider: OidcProvider, tenant_id: str, login: str
) -> tuple[str, httpx.Response]:
    """(the callback URL the provider sent the browser to, the app's answer to it)."""
    url = await provider.sign_in(await start(h, tenant_id), login)
    return url, await callback(h, url)
