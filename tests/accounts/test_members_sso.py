"""Invitations to an organisation that enforces single sign-on, against a real OpenID provider
(oidc-provider on Node) and a real DNS server on loopback: the invited person comes in through the
provider only, with the invitation's role; a removed member comes back only with a new invitation."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from agent_server.gateway import repository as repo
from tests.accounts.dns_server import LoopbackDns
from tests.accounts.members import invitation_token
from tests.accounts.oidc_provider.server import OidcProvider
from tests.accounts.oidc_provider.world import CALLBACK_URL, set_up_sso, sign_in, sso_app
from tests.gateway.conftest import Harness, TenantAdmin
from tests.pages.conftest import BROWSER_ACCEPT

DOMAIN = "members-sso.example"
USERS = {
    "alice": {"email": f"alice@{DOMAIN}", "email_verified": True},
    "bea": {"email": f"bea@{DOMAIN}", "email_verified": True},
}


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
    async with sso_app(tmp_path, dns, mail_worker=False) as harness:
        yield harness


async def enforced_org(h: Harness, provider: OidcProvider, dns: LoopbackDns) -> TenantAdmin:
    """An Enterprise organisation with the provider, a verified domain and enforcement on; its admin is
    a platform administrator (who keeps password sign-in), signed in again after enforcement."""
    admin = await h.tenant("enterprise", permissions=("platform:admin", "tenant:admin"))
    await set_up_sso(h, admin, provider, dns, DOMAIN)
    assert (
        await h.client.patch("/admin/sso", json={"enforced": True}, headers=admin.headers)
    ).status_code == 200
    return TenantAdmin(admin.id, admin.email, await h.login(admin.email))


async def invite(h: Harness, admin: TenantAdmin, email: str, role: str) -> str:
    """Invite and return the link's token (read from the queued mail)."""
    made = await h.client.post(
        "/admin/invitations", json={"email": email, "role": role}, headers=admin.headers
    )
    assert made.status_code == 201, made.text
    return await invitation_token(h.app, email)


async def test_an_invited_person_joins_through_the_provider_with_the_invitations_role(
    h: Harness, provider: OidcProvider, dns: LoopbackDns
) -> None:
    admin = await enforced_org(h, provider, dns)
    elsewhere = await h.client.post(
        "/admin/invitations",
        json={"email": "carol@elsewhere.example", "role": "viewer"},
        headers=admin.headers,
    )
    assert (
        elsewhere.status_code == 400 and elsewhere.json()["error"]["code"] == "invitation_domain_not_verified"
    )
    token = await invite(h, admin, f"alice@{DOMAIN}", "viewer")
    link = (await h.client.get("/admin/auth/invitation", params={"token": token})).json()
    assert link["sso_required"] is True and link["state"] == "pending"
    refused = await h.client.post("/admin/auth/invitation", json={"token": token, "password": "x" * 20})
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "sso_required"
    page = await h.client.get(
        "/app/invitations/accept", params={"token": token}, headers={"Accept": BROWSER_ACCEPT}
    )
    assert 'data-test="invite-sso-form"' in page.text and 'name="password"' not in page.text

    _, answer = await sign_in(h, provider, admin.id, "alice")
    assert answer.status_code == 200, answer.text
    alice = {"Authorization": f"Bearer {answer.json()['access_token']}"}
    user = await repo.find_user(h.gateway.db, f"alice@{DOMAIN}")
    assert user is not None and user.role == "viewer" and user.tenant_id == admin.id  # not the JIT admin
    assert (await h.client.get("/admin/api-keys", headers=alice)).status_code == 200
    create = await h.client.post("/admin/api-keys", json={"name": "a", "scopes": ["chat"]}, headers=alice)
    assert create.status_code == 403 and create.json()["error"]["code"] == "role_not_allowed"
    used = (await h.client.get("/admin/auth/invitation", params={"token": token})).json()
    assert used["state"] == "accepted"

    _, plain = await sign_in(h, provider, admin.id, "bea")  # no invitation: the connection's default
    assert plain.status_code == 200
    bea = await repo.find_user(h.gateway.db, f"bea@{DOMAIN}")
    assert bea is not None and bea.role == "admin"


async def test_a_removed_member_comes_back_through_the_provider_only_with_a_new_invitation(
    h: Harness, provider: OidcProvider, dns: LoopbackDns
) -> None:
    admin = await enforced_org(h, provider, dns)
    await invite(h, admin, f"alice@{DOMAIN}", "developer")
    _, first = await sign_in(h, provider, admin.id, "alice")
    user_id = first.json()["user_id"]
    removed = await h.client.delete(f"/admin/members/{user_id}", headers=admin.headers)
    assert removed.status_code == 204

    _, again = await sign_in(h, provider, admin.id, "alice")
    assert (
        again.status_code == 403 and again.json()["error"]["code"] == "SSO_NOT_A_MEMBER"
    )  # the site envelope of /sso
    await invite(h, admin, f"alice@{DOMAIN}", "billing")
    _, back = await sign_in(h, provider, admin.id, "alice")
    assert back.status_code == 200 and back.json()["user_id"] == user_id  # the same account
    user = await repo.find_user(h.gateway.db, f"alice@{DOMAIN}")
    assert user is not None and (user.tenant_id, user.role) == (admin.id, "billing")
