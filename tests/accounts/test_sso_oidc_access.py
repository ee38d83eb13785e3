"""Who signs in how: SSO enforcement against password sign-in, discovery by e-mail, and the limits
per address on the public SSO routes; against the real OpenID provider and DNS server on loopback.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from agent_server.gateway import repository as repo
from tests.accounts.dns_server import LoopbackDns
from tests.accounts.oidc_provider.server import OidcProvider
from tests.accounts.oidc_provider.world import CALLBACK_URL, set_up_sso, sign_in, sso_app
from tests.gateway.conftest import PASSWORD, Harness, password_hash

DOMAIN = "acme-sso.test"
USERS = {"alice": {"email": f"alice@{DOMAIN}", "email_verified": True}}


@pytest.fixture(scope="module")
def provider() -> Iterator[OidcProvider]:
    with OidcProvider(CALLBACK_URL, USERS) as running_provider:
        yield running_provider


@pytest.fixture(scope="module")
def dns() -> Iterator[LoopbackDns]:
    with LoopbackDns() as server:
        yield server


@pytest.fixture
async def h(tmp_path: Path, dns: LoopbackDns) -> AsyncIterator[Harness]:
    async with sso_app(tmp_path, dns) as harness:
        yield harness


def error_code(response: httpx.Response) -> str:
    return response.json()["error"]["code"]


async def test_enforcement_turns_password_sign_in_off_for_the_tenant(
    h: Harness, provider: OidcProvider, dns: LoopbackDns
) -> None:
    admin = await h.tenant("enterprise")
    early = await h.client.patch("/admin/sso", json={"enforced": True}, headers=admin.headers)
    assert early.status_code == 409 and error_code(early) == "sso_not_ready"

    await set_up_sso(h, admin, provider, dns, DOMAIN)
    member = f"member@{DOMAIN}"
    await repo.add_user(
        h.gateway.db, repo.new_user(h.clock.now(), admin.id, member, await password_hash(), [])
    )
    enforced = await h.client.patch("/admin/sso", json={"enforced": True}, headers=admin.headers)
    assert enforced.status_code == 200 and enforced.json() == {"enforced": True}

    for email in (admin.email, member):
        login = await h.client.post("/admin/auth/login", json={"email": email, "password": PASSWORD})
        assert login.status_code == 403 and error_code(login) == "sso_required", login.text

    disable = await h.client.put(
        "/admin/sso/oidc",
        json={
            "issuer": provider.issuer,
            "client_id": provider.client_id,
            "client_secret": "x",
            "enabled": False,
        },
        headers=admin.headers,
    )
    assert disable.status_code == 409 and error_code(disable) == "sso_enforced"
    dropped = await h.client.delete(f"/admin/sso/domains/{DOMAIN}", headers=admin.headers)
    assert dropped.status_code == 409 and error_code(dropped) == "sso_enforced"
    assert (await h.client.delete("/admin/sso/oidc", headers=admin.headers)).status_code == 409
    # Nothing of the refused changes stuck: the connection (and its secret) still signs people in.
    _, answer = await sign_in(h, provider, admin.id, "alice")
    assert answer.status_code == 200, answer.text

    off = await h.client.patch("/admin/sso", json={"enforced": False}, headers=admin.headers)
    assert off.status_code == 200
    login = await h.client.post("/admin/auth/login", json={"email": member, "password": PASSWORD})
    assert login.status_code == 200, login.text


async def test_discovery_points_an_address_to_its_tenants_provider(
    h: Harness, provider: OidcProvider, dns: LoopbackDns
) -> None:
    admin = await h.tenant("enterprise")
    nothing = await h.client.post("/sso/discover", json={"email": f"alice@{DOMAIN}"})
    assert nothing.status_code == 404 and error_code(nothing) == "SSO_NOT_AVAILABLE"

    await set_up_sso(h, admin, provider, dns, DOMAIN)
    found = await h.client.post("/sso/discover", json={"email": f"Alice@{DOMAIN.upper()}"})
    assert found.status_code == 200, found.text
    start_url = f"http://127.0.0.1:8000/sso/oidc/{admin.id}/start"
    assert found.json() == {"protocol": "oidc", "tenant_id": admin.id, "start_url": start_url}
    elsewhere = await h.client.post("/sso/discover", json={"email": "someone@elsewhere.test"})
    assert elsewhere.status_code == 404
    invalid = await h.client.post("/sso/discover", json={"email": "not an address"})
    assert invalid.status_code == 400

    body = {
        "issuer": provider.issuer,
        "client_id": provider.client_id,
        "client_secret": "s",
        "enabled": False,
    }
    assert (await h.client.put("/admin/sso/oidc", json=body, headers=admin.headers)).status_code == 200
    disabled = await h.client.post("/sso/discover", json={"email": f"alice@{DOMAIN}"})
    assert disabled.status_code == 404
    refused = await h.client.get(f"/sso/oidc/{admin.id}/start")
    assert refused.status_code == 404 and error_code(refused) == "SSO_NOT_CONFIGURED"


async def test_starts_and_discoveries_are_limited_per_address(
    h: Harness, provider: OidcProvider, dns: LoopbackDns
) -> None:
    admin = await h.tenant("enterprise")
    await set_up_sso(h, admin, provider, dns, DOMAIN)
    for _ in range(60):
        assert (await h.client.post("/sso/discover", json={"email": f"a@{DOMAIN}"})).status_code == 200
    limited = await h.client.post("/sso/discover", json={"email": f"a@{DOMAIN}"})
    assert limited.status_code == 429 and "retry-after" in limited.headers
    for _ in range(300):
        assert (await h.client.get(f"/sso/oidc/{admin.id}/start")).status_code == 302
    assert (await h.client.get(f"/sso/oidc/{admin.id}/start")).status_code == 429
    h.clock.advance(600)
    assert (await h.client.get(f"/sso/oidc/{admin.id}/start")).status_code == 302
    assert (await h.client.post("/sso/discover", json={"email": f"a@{DOMAIN}"})).status_code == 200
