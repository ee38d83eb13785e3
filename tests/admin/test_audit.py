"""Audit: every admin action is recorded; rules flag entries and flagged entries reach webhooks."""

from __future__ import annotations

from agent_server.foundation.timeutil import iso, utc
from agent_server.gateway import repository as gateway_repo
from agent_server.gateway.passwords import hash_password
from tests.admin.conftest import Receiver, World


async def entries(world: World, who: str = "a_admin", **params: str) -> list[dict]:
    response = await world.client.get("/admin/audit", params=params, headers=world.auth(who))
    assert response.status_code == 200, response.text
    return response.json()["data"]


async def test_admin_actions_are_recorded_with_actor_tenant_target_and_ip(world: World) -> None:
    auth = world.auth("a_admin")
    hook = (
        await world.client.post(
            "/admin/webhooks", json={"url": "http://127.0.0.1:9/a", "events": ["key.rotated"]}, headers=auth
        )
    ).json()
    await world.client.delete(f"/admin/webhooks/{hook['id']}", headers=auth)
    created = await world.client.post(
        "/admin/api-keys", json={"name": "ci", "scopes": ["chat"]}, headers=auth
    )
    await world.client.delete(f"/admin/api-keys/{created.json()['id']}", headers=auth)
    await world.client.post("/admin/office_suite/auto-provision", json={}, headers=auth)
    await world.client.get("/admin/webhooks", headers=auth)  # reads are not actions

    log = await entries(world)
    actions = [e["action"] for e in reversed(log)]
    assert actions == [
        "webhook.create",
        "webhook.delete",
        "api_key.create",
        "api_key.revoke",
        "office_suite.auto_provision",
    ]
    first = log[-1]
    assert first["actor"] == world.users["a_admin"] and first["target"] == hook["id"]
    assert first["ip"] == "127.0.0.1" and first["outcome"] == "ok" and first["at"].endswith("Z")
    assert log[-3]["details"]["scopes"] == ["chat"] and log[-4]["target"] == created.json()["id"]
    assert hook["secret"] not in str(log) and created.json()["key"] not in str(log)
    assert await entries(world, "b_admin") == []  # another tenant sees none of it


async def test_a_key_with_the_admin_scope_is_flagged_and_announced(world: World, receiver: Receiver) -> None:
    auth = world.auth("platform")  # tenant P is on the enterprise plan, which allows the admin scope
    hook = (
        await world.client.post(
            "/admin/webhooks", json={"url": receiver.url, "events": ["audit.flagged"]}, headers=auth
        )
    ).json()
    response = await world.client.post(
        "/admin/api-keys", json={"name": "ops", "scopes": ["chat", "admin"]}, headers=auth
    )
    assert response.status_code == 201
    [flagged] = await entries(world, "platform", flagged="true")
    assert (
        flagged["action"] == "api_key.create"
        and flagged["flag_reason"] == "API key issued with the admin scope"
    )

    assert await world.admin.worker.tick() == 1
    [received] = receiver.requests
    payload = received.json()
    assert payload["type"] == "audit.flagged" and payload["tenant_id"] == world.tenants["p"]
    assert payload["data"]["audit_id"] == flagged["id"] and payload["data"]["action"] == "api_key.create"
    assert received.headers["webhook-id"] == payload["id"]
    assert hook["id"]


async def test_repeated_failed_logins_are_flagged_once_per_crossing(world: World, receiver: Receiver) -> None:
    services = world.app.state.services
    user = gateway_repo.new_user(
        world.clock.now(),
        world.tenants["a"],
        "owner@alpha.example",
        await hash_password("a long correct horse battery"),
        ["tenant:admin"],
    )
    await gateway_repo.add_user(services.db, user)
    await world.client.post(
        "/admin/webhooks",
        json={"url": receiver.url, "events": ["audit.flagged"]},
        headers=world.auth("a_admin"),
    )
    limit = world.settings.audit_failed_login_limit
    for _ in range(limit + 1):
        response = await world.client.post(
            "/admin/auth/login", json={"email": "Owner@alpha.example", "password": "wrong password!!"}
        )
        assert response.status_code == 401
    good = await world.client.post(
        "/admin/auth/login", json={"email": "owner@alpha.example", "password": "a long correct horse battery"}
    )
    assert good.status_code == 200

    log = await entries(world)
    failed = [e for e in log if e["action"] == "auth.login_failed"]
    assert len(failed) == limit + 1 and all(e["actor"] == "owner@alpha.example" for e in failed)
    assert [e["flagged"] for e in reversed(failed)] == [False] * (limit - 1) + [True, False]
    assert any(e["action"] == "auth.login" and e["outcome"] == "ok" for e in log)
    assert "wrong password" not in str(log)
    await world.admin.worker.tick()
    [received] = receiver.requests
    assert (
        received.json()["data"]["reason"]
        == f"{limit} failed logins within {world.settings.audit_failed_login_window_seconds} s"
    )


async def test_the_audit_list_needs_the_audit_log_feature(world: World) -> None:
    await world.client.patch(
        f"/admin/platform/tenants/{world.tenants['a']}",
        json={"plan_id": "starter"},
        headers=world.auth("platform"),
    )
    response = await world.client.get("/admin/audit", headers=world.auth("a_admin"))
    assert response.status_code == 403 and response.json()["error"]["code"] == "plan_limit_exceeded"


async def test_platform_admins_list_tenants_and_change_plans(world: World) -> None:
    auth = world.auth("platform")
    listed = (await world.client.get("/admin/platform/tenants", headers=auth)).json()
    assert listed["total"] == 3 and {t["id"] for t in listed["data"]} == set(world.tenants.values())
    assert all("password" not in str(t) for t in listed["data"])
    tenant_a = world.tenants["a"]
    ends = iso(utc(world.clock.now() + 365 * 86_400))  # a negotiated plan is set with its contract's end
    changed = await world.client.patch(
        f"/admin/platform/tenants/{tenant_a}",
        json={"plan_id": "enterprise", "contract_ends_at": ends},
        headers=auth,
    )
    assert changed.status_code == 200 and changed.json()["plan_id"] == "enterprise"
    bad = await world.client.patch(
        f"/admin/platform/tenants/{tenant_a}", json={"plan_id": "gold"}, headers=auth
    )
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "plan_id"
    sneaky = await world.client.patch(f"/admin/platform/tenants/{tenant_a}", json={"name": "x"}, headers=auth)
    assert sneaky.status_code == 400
    missing = await world.client.patch(
        "/admin/platform/tenants/ten_nope", json={"plan_id": "starter"}, headers=auth
    )
    assert missing.status_code == 404
    # The changed tenant's admins see who changed their plan.
    [entry] = [
        e for e in await entries(world) if e["action"] == "platform.tenant.update" and e["outcome"] == "ok"
    ]
    assert entry["actor"] == world.users["platform"] and entry["details"]["plan_before"] == "professional"
