"""Roles over the JSON API: the owner rules, ownership transfer, leaving, and a role change applying at
the member's next request."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import pytest

from agent_server.foundation.clock import ManualClock
from agent_server.foundation.settings import Settings
from http_facade.app import create_app
from tests.accounts.conftest import World, accounts_settings, bearer
from tests.accounts.members import MEMBER_PASSWORD, actions, code, join
from tests.conftest import BASE_URL, running


async def role_of(world: World, admin: dict[str, str], user_id: str) -> str | None:
    return (await world.client.get(f"/admin/members/{user_id}", headers=admin)).json()["role"]


async def id_of(world: World, admin: dict[str, str], email: str) -> str:
    members = (await world.client.get("/admin/members", headers=admin)).json()["data"]
    return next(m["id"] for m in members if m["email"] == email)


async def test_the_last_owner_can_neither_leave_nor_be_demoted_nor_removed(world: World) -> None:
    owner = await world.registered_admin("ola@acme.example", "Acme")
    first, first_id = bearer(owner["access_token"]), owner["user"]["id"]
    admin = await join(world, first, "ada@acme.example", "admin")
    admin_id = await id_of(world, first, "ada@acme.example")

    left = await world.client.delete("/admin/membership", headers=first)
    assert left.status_code == 409 and code(left) == "last_owner"
    demoted = await world.client.patch(f"/admin/members/{first_id}", json={"role": "admin"}, headers=first)
    assert demoted.status_code == 409 and code(demoted) == "last_owner"
    removed = await world.client.delete(f"/admin/members/{first_id}", headers=admin)
    assert removed.status_code == 403 and code(removed) == "owner_required"  # admins never touch owners
    promoted = await world.client.patch(f"/admin/members/{admin_id}", json={"role": "owner"}, headers=admin)
    assert promoted.status_code == 403 and code(promoted) == "owner_required"
    self_removed = await world.client.delete(f"/admin/members/{first_id}", headers=first)
    assert self_removed.status_code == 409 and code(self_removed) == "last_owner"
    assert await role_of(world, first, first_id) == "owner"

    # With a second owner, the first may step down; then the second is the last one.
    made = await world.client.patch(f"/admin/members/{admin_id}", json={"role": "owner"}, headers=first)
    assert made.status_code == 200 and made.json()["role"] == "owner"
    down = await world.client.patch(f"/admin/members/{first_id}", json={"role": "viewer"}, headers=first)
    assert down.status_code == 200 and down.json()["role"] == "viewer"
    assert (await world.client.delete("/admin/membership", headers=admin)).status_code == 409
    unknown = await world.client.patch(f"/admin/members/{admin_id}", json={"role": "boss"}, headers=admin)
    assert unknown.status_code == 400
    entries = await actions(world, owner["tenant"]["id"])
    assert ("member.role_change", admin_id, "ok") in entries and (
        "member.leave",
        first_id,
        "failed",
    ) in entries
    assert ("member.remove", first_id, "denied") in entries


async def test_ownership_is_handed_over_in_one_step(world: World) -> None:
    owner = await world.registered_admin("ola@beta.example", "Beta")
    first = bearer(owner["access_token"])
    dev = await join(world, first, "dan@beta.example", "developer")
    dev_id = await id_of(world, first, "dan@beta.example")
    assert (await world.client.get("/admin/invitations", headers=dev)).status_code == 403
    to_self = await world.client.post(
        "/admin/ownership/transfer", json={"user_id": owner["user"]["id"]}, headers=first
    )
    assert to_self.status_code == 409 and code(to_self) == "transfer_to_self"
    handed = await world.client.post("/admin/ownership/transfer", json={"user_id": dev_id}, headers=first)
    assert handed.status_code == 200, handed.text
    assert (handed.json()["owner"]["role"], handed.json()["previous"]["role"]) == ("owner", "admin")
    # The same tokens, at their next request: the former owner is an admin, the developer the owner.
    assert (await world.client.get("/admin/invitations", headers=dev)).status_code == 200
    back = await world.client.post(
        "/admin/ownership/transfer", json={"user_id": owner["user"]["id"]}, headers=first
    )
    assert back.status_code == 403 and code(back) == "role_not_allowed"
    assert (await world.client.delete("/admin/membership", headers=first)).status_code == 200
    assert (await world.client.get("/admin/members", headers=first)).status_code == 401  # left: sessions end
    assert ("member.ownership_transfer", dev_id, "ok") in await actions(world, owner["tenant"]["id"])


async def test_a_new_role_applies_at_the_members_next_request(world: World) -> None:
    owner = await world.registered_admin("ola@gamma.example", "Gamma")
    first = bearer(owner["access_token"])
    member = await join(world, first, "val@gamma.example", "developer")
    member_id = await id_of(world, first, "val@gamma.example")
    key = {"name": "k", "scopes": ["chat"]}
    assert (await world.client.post("/admin/api-keys", json=key, headers=member)).status_code == 201
    changed = await world.client.patch(f"/admin/members/{member_id}", json={"role": "viewer"}, headers=first)
    assert changed.status_code == 200
    refused = await world.client.post("/admin/api-keys", json=key, headers=member)
    assert refused.status_code == 403 and code(refused) == "role_not_allowed"
    assert "viewer" in refused.json()["error"]["message"]
    assert (await world.client.get("/admin/members", headers=member)).status_code == 200  # viewers read
    await world.client.patch(f"/admin/members/{member_id}", json={"role": "billing"}, headers=first)
    assert (await world.client.get("/admin/api-keys", headers=member)).status_code == 403
    billing = world.app.state.billing.segment
    assert (await world.client.get(f"/{billing}/status", headers=member)).status_code == 200
    signed_in = await world.client.post(
        "/admin/auth/login", json={"email": "val@gamma.example", "password": MEMBER_PASSWORD}
    )
    assert signed_in.status_code == 200


@asynccontextmanager
async def world_on(settings: Settings) -> AsyncIterator[World]:
    app = create_app(accounts_settings(settings), clock=(clock := ManualClock(start=time.time())))
    async with (
        running(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url=BASE_URL) as client,
    ):
        yield World(app, client, clock, settings)


@pytest.mark.parametrize("database", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def test_two_owners_demoting_each_other_at_once_leave_one_owner(
    database: str, settings: Settings, request: pytest.FixtureRequest
) -> None:
    """Each change locks the organisation's row first: the second waits, then sees the first's change."""
    if database == "postgres":
        settings = settings.model_copy(update={"database_url": request.getfixturevalue("postgres_url")})
    async with world_on(settings) as world:
        owner = await world.registered_admin("ola@delta.example", "Delta")
        first = bearer(owner["access_token"])
        second = await join(world, first, "oz@delta.example", "admin")
        second_id = await id_of(world, first, "oz@delta.example")
        await world.client.patch(f"/admin/members/{second_id}", json={"role": "owner"}, headers=first)
        for _ in range(3):
            answers = await asyncio.gather(
                world.client.patch(
                    f"/admin/members/{owner['user']['id']}", json={"role": "admin"}, headers=second
                ),
                world.client.patch(f"/admin/members/{second_id}", json={"role": "admin"}, headers=first),
            )
            statuses = sorted(a.status_code for a in answers)
            assert statuses in ([200, 409], [403, 409], [200, 403]), [a.text for a in answers]
            members = (await world.client.get("/admin/members", headers=first)).json()["data"]
            assert [m["role"] for m in members].count("owner") == 1, members
            # Both owners again for the next round.
            owner_now = next(m for m in members if m["role"] == "owner")
            demoted = next(m for m in members if m["role"] != "owner")
            by = first if owner_now["id"] == owner["user"]["id"] else second
            await world.client.patch(f"/admin/members/{demoted['id']}", json={"role": "owner"}, headers=by)


async def test_password_changes_and_sign_outs_are_audited_under_their_names(world: World) -> None:
    owner = await world.registered_admin("ola@eps.example", "Eps")
    session = bearer(owner["access_token"])
    body = {"current_password": "wrong-wrong-wrong", "new_password": "plum-harvest-signal-64"}
    assert (await world.client.post("/admin/auth/password", json=body, headers=session)).status_code == 400
    assert (await world.client.post("/admin/auth/logout", headers=session)).status_code == 200
    entries = await actions(world, owner["tenant"]["id"])
    assert ("auth.password_change", None, "failed") in entries and ("auth.logout", None, "ok") in entries
