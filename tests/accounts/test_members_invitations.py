"""Invitations over the JSON API: the mail and its one-time link, acceptance, expiry, resend, revoke."""

from __future__ import annotations

import jwt

from agent_server.gateway import repository as repo
from tests.accounts.conftest import PASSWORD, World, bearer
from tests.accounts.members import MEMBER_PASSWORD, accept, actions, code, invite


async def signed_in(world: World, email: str) -> dict[str, str]:
    answer = await world.client.post("/admin/auth/login", json={"email": email, "password": PASSWORD})
    assert answer.status_code == 200, answer.text
    return bearer(answer.json()["access_token"])


async def test_an_invited_developer_joins_with_a_password_and_gets_a_developers_rights(world: World) -> None:
    owner = await world.registered_admin("olga@acme.example", "Acme")
    admin = bearer(owner["access_token"])
    token = await invite(world, admin, "Dev@Acme.example", "developer")
    (mail,) = [m for m in await world.mails("dev@acme.example") if m.kind == "member_invite"]
    assert mail.subject == "Join Acme on " + world.app.state.services.knowledge.pack.company.name
    assert "olga@acme.example invited you" in mail.text and "as developer" in mail.text
    described = await world.client.get("/admin/auth/invitation", params={"token": token})
    assert described.status_code == 200 and described.headers["cache-control"] == "no-store"
    assert described.json() | {"expires_at": "-"} == {
        "object": "invitation_link", "state": "pending", "email": "dev@acme.example", "role": "developer",
        "organisation": "Acme", "expires_at": "-", "account": "new", "sso_required": False,
    }  # fmt: skip
    weak = await world.client.post("/admin/auth/invitation", json={"token": token, "password": "short"})
    assert weak.status_code == 400 and code(weak) == "password_too_short"

    joined = await accept(world, token)
    assert jwt.decode(joined["access_token"], options={"verify_signature": False})["role"] == "developer"
    dev = bearer(joined["access_token"])
    assert joined["tenant_id"] == owner["tenant"]["id"]
    assert (
        await world.client.post("/admin/api-keys", json={"name": "d", "scopes": ["chat"]}, headers=dev)
    ).status_code == 201
    refused = await world.client.get("/admin/members", headers=dev)
    assert refused.status_code == 403 and code(refused) == "role_not_allowed"
    assert "developer" in refused.json()["error"]["message"]
    again = await world.client.post(
        "/admin/auth/invitation", json={"token": token, "password": MEMBER_PASSWORD}
    )
    assert again.status_code == 400 and code(again) == "link_used"  # the link works once

    members = (await world.client.get("/admin/members", headers=admin)).json()["data"]
    assert sorted((m["email"], m["role"], m["you"]) for m in members) == [
        ("dev@acme.example", "developer", False), ("olga@acme.example", "owner", True)]  # fmt: skip
    (listed,) = (await world.client.get("/admin/invitations", headers=admin)).json()["data"]
    assert listed["state"] == "accepted" and listed["accepted_by"] == joined["user_id"]
    assert "digest" not in listed and token not in str(listed)
    tenant = owner["tenant"]["id"]
    assert ("invitation.create", listed["id"], "ok") in await actions(world, tenant)
    assert ("invitation.accept", None, "ok") in await actions(world, tenant)


async def test_an_invitation_expires_and_a_resend_mails_a_new_link_that_replaces_the_old(
    world: World,
) -> None:
    owner = await world.registered_admin("olga@beta.example", "Beta")
    admin = bearer(owner["access_token"])
    old_token = await invite(world, admin, "late@beta.example", "viewer")
    world.clock.advance(world.settings.invite_ttl_seconds - 1)
    state = (await world.client.get("/admin/auth/invitation", params={"token": old_token})).json()["state"]
    assert state == "pending"
    world.clock.advance(2)
    assert (await world.client.get("/admin/auth/invitation", params={"token": old_token})).json()[
        "state"
    ] == "expired"
    late = await world.client.post(
        "/admin/auth/invitation", json={"token": old_token, "password": MEMBER_PASSWORD}
    )
    assert late.status_code == 400 and code(late) == "link_expired"
    assert await repo.find_user(world.app.state.services.db, "late@beta.example") is None

    admin = await signed_in(world, "olga@beta.example")  # a week later: the first session expired
    (listed,) = (await world.client.get("/admin/invitations", headers=admin)).json()["data"]
    assert listed["state"] == "expired"
    resent = await world.client.post(f"/admin/invitations/{listed['id']}/resend", headers=admin)
    assert resent.status_code == 200 and resent.json()["state"] == "pending" and resent.json()["sends"] == 2
    new_token = [m for m in await world.mails("late@beta.example") if m.kind == "member_invite"][-1].token()
    assert new_token != old_token
    gone = await world.client.post(
        "/admin/auth/invitation", json={"token": old_token, "password": MEMBER_PASSWORD}
    )
    assert gone.status_code == 400 and code(gone) == "link_invalid"  # only the newest link works
    assert (await accept(world, new_token))["tenant_id"] == owner["tenant"]["id"]
    closed = await world.client.post(f"/admin/invitations/{listed['id']}/resend", headers=admin)
    assert closed.status_code == 409 and code(closed) == "invitation_closed"


async def test_revoking_ends_the_link_and_the_refusals_are_clear(world: World) -> None:
    owner = await world.registered_admin("olga@gamma.example", "Gamma")
    admin = bearer(owner["access_token"])
    token = await invite(world, admin, "maybe@gamma.example", "billing")
    pending = await world.client.post(
        "/admin/invitations", json={"email": "MAYBE@gamma.example", "role": "viewer"}, headers=admin
    )
    assert pending.status_code == 409 and code(pending) == "invitation_pending"
    member = await world.client.post(
        "/admin/invitations", json={"email": "olga@gamma.example", "role": "viewer"}, headers=admin
    )
    assert member.status_code == 409 and code(member) == "already_member"
    owner_role = await world.client.post(
        "/admin/invitations", json={"email": "boss@gamma.example", "role": "owner"}, headers=admin
    )
    assert owner_role.status_code == 400  # ownership is never given by invitation
    (listed,) = (await world.client.get("/admin/invitations", headers=admin)).json()["data"]
    revoked = await world.client.delete(f"/admin/invitations/{listed['id']}", headers=admin)
    assert revoked.status_code == 200 and revoked.json()["state"] == "revoked"
    assert (await world.client.get("/admin/auth/invitation", params={"token": token})).json()[
        "state"
    ] == "revoked"
    refused = await world.client.post(
        "/admin/auth/invitation", json={"token": token, "password": MEMBER_PASSWORD}
    )
    assert refused.status_code == 400 and code(refused) == "invitation_revoked"
    invalid = await world.client.get("/admin/auth/invitation", params={"token": "not-a-token"})
    assert invalid.json() == {"object": "invitation_link", "state": "invalid"}
    other = await world.registered_admin("olga@delta.example", "Delta")
    foreign = await world.client.delete(
        f"/admin/invitations/{listed['id']}", headers=bearer(other["access_token"])
    )
    assert foreign.status_code == 404  # another organisation's invitation is not there
    assert ("invitation.revoke", listed["id"], "ok") in await actions(world, owner["tenant"]["id"])


async def test_a_removed_member_keeps_the_account_and_comes_back_through_a_new_invitation(
    world: World,
) -> None:
    owner = await world.registered_admin("olga@eta.example", "Eta")
    admin = bearer(owner["access_token"])
    joined = await accept(world, await invite(world, admin, "rob@eta.example", "developer"))
    rob = bearer(joined["access_token"])
    assert (
        await world.client.delete(f"/admin/members/{joined['user_id']}", headers=admin)
    ).status_code == 204
    assert (await world.client.get("/admin/api-keys", headers=rob)).status_code == 401  # at once

    signed_in = await world.client.post(
        "/admin/auth/login", json={"email": "rob@eta.example", "password": MEMBER_PASSWORD}
    )
    assert signed_in.status_code == 200
    alone = bearer(signed_in.json()["access_token"])
    assert jwt.decode(signed_in.json()["access_token"], options={"verify_signature": False})["tenant"] == ""
    refused = await world.client.get("/admin/api-keys", headers=alone)
    assert refused.status_code == 403 and code(refused) == "role_not_allowed"
    assert (await world.client.get("/admin/auth/passkeys", headers=alone)).status_code == 200  # own account
    mine = (await world.client.get("/admin/membership", headers=alone)).json()
    assert (mine["tenant_id"], mine["role"], mine["email"]) == (None, None, "rob@eta.example")

    token = await invite(world, admin, "rob@eta.example", "viewer")
    link = (await world.client.get("/admin/auth/invitation", params={"token": token})).json()
    assert link["account"] == "existing"
    new_account = await world.client.post(
        "/admin/auth/invitation", json={"token": token, "password": MEMBER_PASSWORD}
    )
    assert new_account.status_code == 409 and code(new_account) == "account_exists"
    stranger = await world.registered_admin("sam@theta.example", "Theta")
    wrong = await world.client.post(
        "/admin/auth/invitation", json={"token": token}, headers=bearer(stranger["access_token"])
    )
    assert wrong.status_code == 403 and code(wrong) == "invitation_other_address"
    back = await world.client.post("/admin/auth/invitation", json={"token": token}, headers=alone)
    assert back.status_code == 200 and back.json()["tenant_id"] == owner["tenant"]["id"]
    viewer = bearer(back.json()["access_token"])
    mine = (await world.client.get("/admin/membership", headers=viewer)).json()
    assert (mine["organisation"], mine["role"]) == ("Eta", "viewer")
    assert (await world.client.get("/admin/api-keys", headers=viewer)).status_code == 200
    assert (
        await world.client.post("/admin/api-keys", json={"name": "v", "scopes": ["chat"]}, headers=viewer)
    ).status_code == 403
    tenant = owner["tenant"]["id"]
    assert ("member.remove", joined["user_id"], "ok") in await actions(world, tenant)


async def test_a_member_of_another_organisation_must_leave_it_before_accepting(world: World) -> None:
    owner = await world.registered_admin("olga@iota.example", "Iota")
    elsewhere = await world.registered_admin("kim@kappa.example", "Kappa")
    token = await invite(world, bearer(owner["access_token"]), "kim@kappa.example", "admin")
    busy = await world.client.post(
        "/admin/auth/invitation", json={"token": token}, headers=bearer(elsewhere["access_token"])
    )
    assert busy.status_code == 409 and code(busy) == "member_elsewhere"
    assert (await world.client.get("/admin/auth/invitation", params={"token": token})).json()[
        "state"
    ] == "pending"
