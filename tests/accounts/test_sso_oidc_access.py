"""Who signs in how: SSO enforcement against password sign-in (and the sessions it ends), discovery
by e-mail, a downgrade to a plan without sso, and the limits per address on the public SSO routes;
against the real OpenID provider and DNS server on loopback.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import func, select, update

from agent_server.gateway import repository as repo
from agent_server.gateway.tables import Tenant
from agent_server.mail.tables import OutboxMail
from tests.accounts.dns_server import LoopbackDns
from tests.accounts.oidc_provider.server import OidcProvider
from tests.accounts.oidc_provider.world import CALLBACK_URL, callback, set_up_sso, sign_in, sso_app, start
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


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def add_user(h: Harness, tenant_id: str, email: str, permissions: list[str]) -> str:
    """A user with the test password, signed in with it: their access token."""
    await repo.add_user(
        h.gateway.db, repo.new_user(h.clock.now(), tenant_id, email, await password_hash(), permissions)
    )
    return await h.login(email)


async def set_plan(h: Harness, tenant_id: str, plan_id: str) -> None:
    async with h.gateway.db.session() as session:
        await session.execute(update(Tenant).where(Tenant.id == tenant_id).values(plan_id=plan_id))  # type: ignore[arg-type]


async def reset_mails(h: Harness, email: str) -> int:
    async with h.gateway.db.session() as session:
        query = select(func.count()).select_from(OutboxMail).where(OutboxMail.to_addr == email)
        return int(await session.scalar(query) or 0)


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
    # The admin who turned it on signed themselves out too: they come back through the provider.
    assert (await h.client.get("/admin/sso", headers=admin.headers)).status_code == 401
    _, alice = await sign_in(h, provider, admin.id, "alice")
    assert alice.status_code == 200, alice.text
    headers = bearer(alice.json()["access_token"])

    disable = await h.client.put(
        "/admin/sso/oidc",
        json={
            "issuer": provider.issuer,
            "client_id": provider.client_id,
            "client_secret": "x",
            "enabled": False,
        },
        headers=headers,
    )
    assert disable.status_code == 409 and error_code(disable) == "sso_enforced"
    dropped = await h.client.delete(f"/admin/sso/domains/{DOMAIN}", headers=headers)
    assert dropped.status_code == 409 and error_code(dropped) == "sso_enforced"
    assert (await h.client.delete("/admin/sso/oidc", headers=headers)).status_code == 409
    # Nothing of the refused changes stuck: the connection (and its secret) still signs people in.
    _, answer = await sign_in(h, provider, admin.id, "alice")
    assert answer.status_code == 200, answer.text

    off = await h.client.patch("/admin/sso", json={"enforced": False}, headers=headers)
    assert off.status_code == 200
    login = await h.client.post("/admin/auth/login", json={"email": member, "password": PASSWORD})
    assert login.status_code == 200, login.text


async def test_turning_enforcement_on_ends_the_members_sessions_but_not_a_platform_admins(
    h: Harness, provider: OidcProvider, dns: LoopbackDns
) -> None:
    admin, other = await h.tenant("enterprise"), await h.tenant("enterprise")
    await set_up_sso(h, admin, provider, dns, DOMAIN)
    member = await add_user(h, admin.id, f"member@{DOMAIN}", ["tenant:admin"])
    operator = await add_user(h, admin.id, "ops@platform.example", ["platform:admin", "tenant:admin"])
    _, alice = await sign_in(h, provider, admin.id, "alice")  # an SSO session from before, too
    earlier = {"admin": admin.token, "member": member, "alice": alice.json()["access_token"]}
    for token in (*earlier.values(), operator, other.token):
        assert (await h.client.get("/admin/api-keys", headers=bearer(token))).status_code == 200

    enforced = await h.client.patch("/admin/sso", json={"enforced": True}, headers=bearer(operator))
    assert enforced.status_code == 200, enforced.text

    for who, token in earlier.items():
        ended = await h.client.get("/admin/api-keys", headers=bearer(token))
        assert ended.status_code == 401 and error_code(ended) == "invalid_token", who
    assert (await h.client.get("/admin/api-keys", headers=bearer(operator))).status_code == 200
    assert (await h.client.get("/admin/api-keys", headers=other.headers)).status_code == 200  # another tenant

    # Only the switch ends sessions: saying "on" again while on ends nothing more.
    _, again = await sign_in(h, provider, admin.id, "alice")
    fresh = bearer(again.json()["access_token"])
    assert (await h.client.patch("/admin/sso", json={"enforced": True}, headers=fresh)).status_code == 200
    assert (await h.client.get("/admin/api-keys", headers=fresh)).status_code == 200


async def test_a_downgrade_stops_sso_and_its_enforcement(
    h: Harness, provider: OidcProvider, dns: LoopbackDns
) -> None:
    admin = await h.tenant("enterprise")
    await set_up_sso(h, admin, provider, dns, DOMAIN)
    member = "member@acme.example"  # a member of the tenant (the reset form's e-mail check refuses .test)
    await add_user(h, admin.id, member, [])
    assert (
        await h.client.patch("/admin/sso", json={"enforced": True}, headers=admin.headers)
    ).status_code == 200
    refused = await h.client.post("/admin/auth/login", json={"email": member, "password": PASSWORD})
    assert refused.status_code == 403 and error_code(refused) == "sso_required"
    forgot = await h.client.post("/admin/auth/password/forgot", json={"email": member})
    assert forgot.status_code == 202 and await reset_mails(h, member) == 0
    pending = await provider.sign_in(await start(h, admin.id), "alice")  # finished after the downgrade

    await set_plan(h, admin.id, "professional")  # a plan without sso

    started = await h.client.get(f"/sso/oidc/{admin.id}/start")  # SAML: test_sso_saml.py
    assert started.status_code == 403, started.text
    assert error_code(started) == "PLAN_LIMIT_EXCEEDED" and started.json()["error"]["param"] == "sso"
    late = await callback(h, pending)
    assert late.status_code == 403 and error_code(late) == "PLAN_LIMIT_EXCEEDED"
    assert await repo.find_user(h.gateway.db, f"alice@{DOMAIN}") is None
    discovered = await h.client.post("/sso/discover", json={"email": f"alice@{DOMAIN}"})
    assert discovered.status_code == 404 and error_code(discovered) == "SSO_NOT_AVAILABLE"
    # Enforcement no longer applies: members sign in with their password, and may reset it.
    login = await h.client.post("/admin/auth/login", json={"email": member, "password": PASSWORD})
    assert login.status_code == 200, login.text
    owner = await h.client.post("/admin/auth/login", json={"email": admin.email, "password": PASSWORD})
    shown = await h.client.get(
        "/admin/sso", headers={"Authorization": f"Bearer {owner.json()['access_token']}"}
    )
    assert shown.json()["enforced"] is True and shown.json()["enforcement_applies"] is False
    forgot = await h.client.post("/admin/auth/password/forgot", json={"email": member})
    assert forgot.status_code == 202 and await reset_mails(h, member) == 1

    # The flag is kept: after an upgrade, enforcement and sign-in through the provider are back.
    await set_plan(h, admin.id, "enterprise")
    again = await h.client.post("/admin/auth/login", json={"email": member, "password": PASSWORD})
    assert again.status_code == 403 and error_code(again) == "sso_required"
    _, alice = await sign_in(h, provider, admin.id, "alice")
    assert alice.status_code == 200, alice.text
    assert (await h.client.post("/sso/discover", json={"email": f"alice@{DOMAIN}"})).status_code == 200


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
