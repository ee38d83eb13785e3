"""The members, invitation and account pages over ASGI with browser-like clients: the same services
as the JSON routes, sessions that end at once, audit entries marked ``via: dashboard``."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from sqlalchemy import select

from agent_server.admin.tables import AuditRecord
from agent_server.foundation.settings import Settings
from agent_server.gateway import repository as repo
from tests.accounts.members import MEMBER_PASSWORD, invitation_token
from tests.gateway.conftest import PASSWORD, password_hash
from tests.pages.dashboard import Dash, Person, csrf_of, dashboard_world, post_form

NEW_PASSWORD = "copper-lighthouse-violin-58"


@pytest.fixture
async def dash(settings: Settings) -> AsyncIterator[Dash]:
    async with dashboard_world(settings) as world:
        yield world


async def owner_of_new_org(dash: Dash, plan: str = "professional") -> Person:
    db, now = dash.app.state.services.db, dash.clock.now()
    tenant = await repo.create_tenant(db, now, f"Org {now}", plan)
    user = repo.new_user(
        now, tenant.id, f"owner-{int(now * 1000)}@org.example", await password_hash(), [], "owner"
    )
    await repo.add_user(db, user)
    return Person(user.email, user.id, tenant.id)


async def audit(dash: Dash, tenant_id: str) -> list[tuple[str, str, object]]:
    async with dash.app.state.services.db.session() as session:
        rows = await session.execute(
            select(AuditRecord.action, AuditRecord.outcome, AuditRecord.details).where(
                AuditRecord.tenant_id == tenant_id
            )
        )
        return [(action, outcome, details.get("via")) for action, outcome, details in rows]


async def test_invite_accept_change_role_and_remove_from_the_pages(dash: Dash) -> None:
    owner = await owner_of_new_org(dash)
    boss = await dash.signed_in(owner)
    sent = await post_form(
        boss, "/app/members", "/app/members/invitations", email="Nia@Org.example", role="developer"
    )
    assert sent.status_code == 303 and sent.headers["location"] == "/app/members?done=invited"
    listed = await boss.get(sent.headers["location"])
    assert (
        'data-test="members-notice"' in listed.text
        and 'data-invitation-email="nia@org.example"' in listed.text
    )

    token = await invitation_token(dash.app, "nia@org.example")
    newcomer = dash.browser("10.0.0.7")
    shown = await newcomer.get("/app/invitations/accept", params={"token": token})
    assert shown.status_code == 200 and 'data-test="invite-form-new"' in shown.text
    weak = await newcomer.post(
        "/app/invitations/accept",
        data={"csrf_token": csrf_of(shown.text), "token": token, "password": "short"},
    )
    assert weak.status_code == 400 and "password_too_short" in weak.text
    joined = await post_form(
        newcomer,
        f"/app/invitations/accept?token={token}",
        "/app/invitations/accept",
        token=token,
        password=MEMBER_PASSWORD,
    )
    assert joined.status_code == 303 and joined.headers["location"] == "/app"
    assert "agentgate_session=ey" in joined.headers["set-cookie"]
    home = await newcomer.get("/app")
    assert home.status_code == 200 and 'data-test="nav-members"' not in home.text  # developers: hidden
    refused = await newcomer.get("/app/members")
    assert refused.status_code == 403 and "role_not_allowed" in refused.text
    assert refused.headers["content-type"].startswith("text/html")
    made = await post_form(newcomer, "/app/keys", "/app/keys", name="dev key", scopes="chat")
    assert made.status_code == 200 and 'data-test="secret-value"' in made.text

    nia = await repo.find_user(dash.app.state.services.db, "nia@org.example")
    assert nia is not None
    as_developer = (await newcomer.get("/app/keys")).text
    assert 'data-test="keys-read-only"' not in as_developer and 'class="plain" disabled' not in as_developer
    changed = await post_form(boss, "/app/members", f"/app/members/{nia.id}/role", role="viewer")
    assert changed.status_code == 303
    keys_page = await newcomer.get("/app/keys")
    assert keys_page.status_code == 200  # viewers read
    # ... and see the form disabled, saying why, with no row actions
    assert 'data-test="keys-read-only"' in keys_page.text and "Your role (viewer)" in keys_page.text
    assert '<fieldset class="plain" disabled>' in keys_page.text
    assert 'data-test="key-row"' in keys_page.text and 'data-test="key-revoke"' not in keys_page.text
    denied = await newcomer.post(
        "/app/keys", data={"csrf_token": csrf_of(keys_page.text), "name": "x", "scopes": "chat"}
    )
    assert denied.status_code == 403 and "role_not_allowed" in denied.text

    removed = await post_form(boss, "/app/members", f"/app/members/{nia.id}/remove")
    assert removed.status_code == 303 and removed.headers["location"] == "/app/members?done=removed"
    gone = await newcomer.get("/app/keys")
    assert gone.status_code == 303 and gone.headers["location"].startswith("/app/login")
    entries = await audit(dash, owner.tenant_id)
    for action in ("invitation.create", "member.role_change", "member.remove"):
        assert (action, "ok", "dashboard") in entries, action
    assert ("invitation.accept", "ok", "dashboard") in entries


async def test_a_person_without_an_organisation_lands_on_the_account_page_and_accepts_there(
    dash: Dash,
) -> None:
    owner = await owner_of_new_org(dash)
    boss = await dash.signed_in(owner)
    db, now = dash.app.state.services.db, dash.clock.now()
    alone = repo.new_user(now, owner.tenant_id, "ray@org.example", await password_hash(), [], None)
    alone.tenant_id = None
    await repo.add_user(db, alone)
    browser = dash.browser("10.0.0.8")
    signed = await post_form(browser, "/app/login", "/app/login", email="ray@org.example", password=PASSWORD)
    assert signed.status_code == 303 and signed.headers["location"] == "/app"
    landed = await browser.get("/app")
    assert landed.status_code == 303 and landed.headers["location"] == "/app/account"
    account = await browser.get("/app/account")
    assert 'data-test="no-organisation"' in account.text
    assert [n for n in ("nav-keys", "nav-members") if n in account.text] == []

    await post_form(boss, "/app/members", "/app/members/invitations", email="ray@org.example", role="billing")
    token = await invitation_token(dash.app, "ray@org.example")
    shown = await browser.get("/app/invitations/accept", params={"token": token})
    assert 'data-test="invite-form-existing"' in shown.text  # signed in as the invited address
    stranger = dash.browser("10.0.0.9")
    assert (
        'data-test="invite-sign-in"'
        in (await stranger.get("/app/invitations/accept", params={"token": token})).text
    )
    joined = await browser.post(
        "/app/invitations/accept", data={"csrf_token": csrf_of(shown.text), "token": token}
    )
    assert joined.status_code == 303
    landing = await browser.get("/app")
    assert (
        landing.status_code == 303 and landing.headers["location"] == "/app/billing"
    )  # billing's first page
    assert (await browser.get("/app/billing")).status_code == 200


async def test_changing_the_password_ends_every_other_session_at_once(dash: Dash) -> None:
    owner = await owner_of_new_org(dash)
    here, laptop = await dash.signed_in(owner), await dash.signed_in(owner, "10.0.0.2")
    old_token = here.cookies["agentgate_session"]
    wrong = await post_form(here, "/app/account", "/app/account/password", current_password="nope" * 4,
                            new_password=NEW_PASSWORD)  # fmt: skip
    assert wrong.status_code == 400 and "current_password_wrong" in wrong.text
    assert (await laptop.get("/app/keys")).status_code == 200  # nothing changed yet
    changed = await post_form(here, "/app/account", "/app/account/password", current_password=PASSWORD,
                              new_password=NEW_PASSWORD)  # fmt: skip
    assert changed.status_code == 303 and changed.headers["location"] == "/app/account?done=password"
    assert "agentgate_session=ey" in changed.headers["set-cookie"]
    after = await here.get(changed.headers["location"])
    assert after.status_code == 200 and 'data-test="account-notice"' in after.text  # this browser goes on
    assert (await laptop.get("/app/keys")).status_code == 303  # the other session ended at once
    stale = await here.get("/admin/api-keys", headers={"Authorization": f"Bearer {old_token}"})
    assert stale.status_code == 401
    relogin = await post_form(dash.browser("10.0.0.3"), "/app/login", "/app/login", email=owner.email,
                              password=NEW_PASSWORD)  # fmt: skip
    assert relogin.status_code == 303
    assert ("auth.password_change", "ok", "dashboard") in await audit(dash, owner.tenant_id)
    assert ("auth.password_change", "failed", "dashboard") in await audit(dash, owner.tenant_id)


async def test_sign_out_everywhere_ends_every_session_at_once(dash: Dash) -> None:
    owner = await owner_of_new_org(dash)
    here, laptop = await dash.signed_in(owner), await dash.signed_in(owner, "10.0.0.2")
    token = laptop.cookies["agentgate_session"]
    out = await post_form(here, "/app/account", "/app/account/sign-out")
    assert out.status_code == 303 and out.headers["location"] == "/app/login?signed_out=1"
    assert 'agentgate_session=""' in out.headers["set-cookie"]
    assert (await here.get("/app/account")).status_code == 303
    assert (await laptop.get("/app/account")).status_code == 303
    api = await laptop.get("/admin/api-keys", headers={"Authorization": f"Bearer {token}"})
    assert api.status_code == 401


async def test_the_last_owner_is_told_why_leaving_is_refused_and_a_member_leaves(dash: Dash) -> None:
    owner = await owner_of_new_org(dash)
    boss = await dash.signed_in(owner)
    refused = await post_form(boss, "/app/account", "/app/account/leave")
    assert refused.status_code == 409 and "last_owner" in refused.text
    member = await dash.person()  # an admin of another organisation, alone there but not its owner
    browser = await dash.signed_in(member)
    left = await post_form(browser, "/app/account", "/app/account/leave")
    assert left.status_code == 303 and left.headers["location"] == "/app/login?signed_out=1"
    user = await repo.find_user(dash.app.state.services.db, member.email)
    assert user is not None and user.tenant_id is None and user.role is None


async def test_the_invitation_page_explains_a_missing_or_unknown_link(dash: Dash) -> None:
    browser = dash.browser()
    for params in ({}, {"token": "not-a-token"}):
        shown = await browser.get("/app/invitations/accept", params=params)
        assert shown.status_code == 200 and 'data-test="invite-invalid"' in shown.text, params
    refused = await post_form(  # the token of any page of this browser
        browser, "/app/login", "/app/invitations/accept", token="nope", password=MEMBER_PASSWORD
    )
    assert refused.status_code == 400 and "link_invalid" in refused.text
