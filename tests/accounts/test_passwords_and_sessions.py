"""Password reset and invitation links, password change and sign-out: each ends earlier sessions."""

from __future__ import annotations

from sqlalchemy import update

from agent_server.gateway import repository as repo
from agent_server.gateway.tables import Tenant
from tests.accounts.conftest import PASSWORD, World, bearer

NEW_PASSWORD = "amber-orchard-kettle-77"


async def login(world: World, email: str, password: str) -> int:
    answer = await world.client.post("/admin/auth/login", json={"email": email, "password": password})
    return answer.status_code


async def test_a_reset_link_sets_the_password_once_and_ends_other_sessions(world: World) -> None:
    admin = await world.registered_admin("ann@acme.example", "Acme")
    old_session = bearer(admin["access_token"])
    sent = await world.client.post("/admin/auth/password/forgot", json={"email": "ANN@acme.example"})
    assert sent.status_code == 202
    (mail,) = [m for m in await world.mails("ann@acme.example") if m.kind == "password_reset"]
    token = mail.token()
    assert f"/app/password/reset?token={token}" in mail.text
    weak = await world.client.post(
        "/admin/auth/password/reset", json={"token": token, "password": "too-short"}
    )
    assert weak.status_code == 400 and weak.json()["error"]["code"] == "password_too_short"
    done = await world.client.post(
        "/admin/auth/password/reset", json={"token": token, "password": NEW_PASSWORD}
    )
    assert done.status_code == 200 and done.headers["cache-control"] == "no-store"
    assert (
        await world.client.get("/admin/api-keys", headers=bearer(done.json()["access_token"]))
    ).status_code == 200
    assert (await world.client.get("/admin/api-keys", headers=old_session)).status_code == 401
    assert await login(world, "ann@acme.example", PASSWORD) == 401
    assert await login(world, "ann@acme.example", NEW_PASSWORD) == 200
    again = await world.client.post(
        "/admin/auth/password/reset", json={"token": token, "password": NEW_PASSWORD}
    )
    assert again.status_code == 400 and again.json()["error"]["code"] == "link_used"


async def test_a_reset_link_expires(world: World) -> None:
    await world.registered_admin("bo@acme.example", "Acme")
    await world.client.post("/admin/auth/password/forgot", json={"email": "bo@acme.example"})
    token = (await world.mails("bo@acme.example"))[-1].token()
    world.clock.advance(world.settings.password_reset_ttl_seconds + 1)
    late = await world.client.post(
        "/admin/auth/password/reset", json={"token": token, "password": NEW_PASSWORD}
    )
    assert late.status_code == 400 and late.json()["error"]["code"] == "link_expired"
    assert await login(world, "bo@acme.example", PASSWORD) == 200


async def test_forgot_answers_the_same_for_unknown_addresses_and_mails_nobody(world: World) -> None:
    await world.registered_admin("cy@acme.example", "Acme")
    known = await world.client.post("/admin/auth/password/forgot", json={"email": "cy@acme.example"})
    unknown = await world.client.post("/admin/auth/password/forgot", json={"email": "zed@acme.example"})
    assert known.status_code == unknown.status_code == 202
    assert known.json()["status"] == unknown.json()["status"] == "sent_if_known"
    assert await world.mails("zed@acme.example") == []


async def test_changing_the_password_needs_the_current_one_and_ends_other_sessions(world: World) -> None:
    admin = await world.registered_admin("dee@acme.example", "Acme")
    session = bearer(admin["access_token"])
    wrong = await world.client.post(
        "/admin/auth/password",
        json={"current_password": "not-my-password-at-all", "new_password": NEW_PASSWORD},
        headers=session,
    )
    assert wrong.status_code == 400 and wrong.json()["error"]["code"] == "current_password_wrong"
    changed = await world.client.post(
        "/admin/auth/password",
        json={"current_password": PASSWORD, "new_password": NEW_PASSWORD},
        headers=session,
    )
    assert changed.status_code == 200
    assert (await world.client.get("/admin/api-keys", headers=session)).status_code == 401
    assert (
        await world.client.get("/admin/api-keys", headers=bearer(changed.json()["access_token"]))
    ).status_code == 200
    assert await login(world, "dee@acme.example", NEW_PASSWORD) == 200
    unauthenticated = await world.client.post("/admin/auth/password", json={"new_password": NEW_PASSWORD})
    assert unauthenticated.status_code == 401


async def test_sign_out_ends_every_session_of_the_user_only(world: World) -> None:
    first = await world.registered_admin("eve@acme.example", "Acme")
    other = await world.registered_admin("fay@globex.example", "Globex")
    second = await world.client.post(
        "/admin/auth/login", json={"email": "eve@acme.example", "password": PASSWORD}
    )
    out = await world.client.post("/admin/auth/logout", headers=bearer(first["access_token"]))
    assert out.status_code == 200 and out.json()["signed_out"] is True
    for token in (first["access_token"], second.json()["access_token"]):
        ended = await world.client.get("/admin/api-keys", headers=bearer(token))
        assert ended.status_code == 401 and ended.json()["error"]["code"] == "invalid_token"
    assert (
        await world.client.get("/admin/api-keys", headers=bearer(other["access_token"]))
    ).status_code == 200
    assert await login(world, "eve@acme.example", PASSWORD) == 200  # signing in again works


async def test_an_sso_enforced_tenant_refuses_password_sign_in_and_resets(world: World) -> None:
    admin = await world.registered_admin("gil@acme.example", "Acme")
    async with world.app.state.services.db.session() as session:
        await session.execute(
            # enforcement applies on a plan with sso (test_sso_oidc_access.py: after a downgrade)
            update(Tenant)
            .where(Tenant.id == admin["tenant"]["id"])
            .values(sso_enforced=True, plan_id="enterprise")
        )
    refused = await world.client.post(
        "/admin/auth/login", json={"email": "gil@acme.example", "password": PASSWORD}
    )
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "sso_required"
    assert "/sso/discover" in refused.json()["error"]["message"]
    wrong = await world.client.post(
        "/admin/auth/login", json={"email": "gil@acme.example", "password": "x" * 12}
    )
    assert wrong.status_code == 401  # a wrong password learns nothing about SSO
    await world.client.post("/admin/auth/password/forgot", json={"email": "gil@acme.example"})
    assert [m for m in await world.mails("gil@acme.example") if m.kind == "password_reset"] == []


async def test_a_platform_admin_creates_a_tenant_and_invites_its_admin(world: World) -> None:
    ops = await world.registered_admin("ops@platform.example", "Platform")
    async with world.app.state.services.db.session() as session:
        user = await session.get(repo.User, ops["user"]["id"])
        user.permissions = ["platform:admin", "tenant:admin"]
    platform = bearer(
        (
            await world.client.post(
                "/admin/auth/login", json={"email": "ops@platform.example", "password": PASSWORD}
            )
        ).json()["access_token"]
    )
    body = {"name": "Initech", "plan_id": "professional", "admin_email": "Hal@Initech.example"}
    created = await world.client.post("/admin/platform/tenants", json=body, headers=platform)
    assert created.status_code == 201, created.text
    assert created.json()["name"] == "Initech" and created.json()["invited"] == "hal@initech.example"
    assert (
        await world.client.post("/admin/platform/tenants", json=body, headers=platform)
    ).status_code == 409
    (invite,) = await world.mails("hal@initech.example")
    assert invite.kind == "invite" and "Initech" in invite.text
    assert await login(world, "hal@initech.example", NEW_PASSWORD) == 401  # no password before the link
    chosen = await world.client.post(
        "/admin/auth/password/reset", json={"token": invite.token(), "password": NEW_PASSWORD}
    )
    assert chosen.status_code == 200 and chosen.json()["tenant_id"] == created.json()["id"]
    assert await login(world, "hal@initech.example", NEW_PASSWORD) == 200
    tenant_admin = bearer(ops["access_token"])  # issued before the permission change: tenant:admin only
    forbidden = await world.client.post(
        "/admin/platform/tenants", json={"name": "Nope", "plan_id": "starter"}, headers=tenant_admin
    )
    assert forbidden.status_code == 403
    unknown_plan = await world.client.post(
        "/admin/platform/tenants", json={"name": "Nope", "plan_id": "gold"}, headers=platform
    )
    assert unknown_plan.status_code == 400 and unknown_plan.json()["error"]["param"] == "plan_id"


async def test_breached_and_short_passwords_are_refused_on_every_path_that_sets_one(world: World) -> None:
    admin = await world.registered_admin("hal@acme.example", "Acme")
    session = bearer(admin["access_token"])
    await world.client.post("/admin/auth/password/forgot", json={"email": "hal@acme.example"})
    token = (await world.mails("hal@acme.example"))[-1].token()
    for weak, code in (
        ("password1234", "password_breached"),
        ("qwerty123456", "password_breached"),
        ("short-pass1", "password_too_short"),
    ):
        registered = await world.client.post(
            "/register",
            json={"email": "ivy@acme.example", "organisation": "Ivy", "plan": "starter", "password": weak},
        )
        assert registered.status_code == 400 and registered.json()["error"]["code"] == code.upper()
        changed = await world.client.post(
            "/admin/auth/password", json={"current_password": PASSWORD, "new_password": weak}, headers=session
        )
        assert changed.status_code == 400 and changed.json()["error"]["code"] == code
        reset = await world.client.post("/admin/auth/password/reset", json={"token": token, "password": weak})
        assert reset.status_code == 400 and reset.json()["error"]["code"] == code
    # Refused passwords used up neither the link nor the e-mail's registration allowance.
    assert (await world.register("ivy@acme.example", "Ivy")).status_code == 202
    done = await world.client.post(
        "/admin/auth/password/reset", json={"token": token, "password": NEW_PASSWORD}
    )
    assert done.status_code == 200
    assert await login(world, "hal@acme.example", NEW_PASSWORD) == 200
