"""API keys in the dashboard: a new key is shown once and works; revoke and rotate take effect at once."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import httpx
import pytest
from sqlalchemy import select

from agent_server.admin.tables import AuditRecord
from agent_server.foundation.settings import Settings
from http_facade.pages.dashboard.route import when
from tests.gateway.conftest import chat_body, key_headers
from tests.pages.dashboard import Dash, dashboard_world, post_form


@pytest.fixture
async def dash(settings: Settings) -> AsyncIterator[Dash]:
    async with dashboard_world(settings) as world:
        yield world


def secret_of(html: str) -> str:
    match = re.search(r'id="secret-value" class="secret" type="text" readonly value="([^"]+)"', html)
    assert match, "no secret on the page"
    return match.group(1)


def key_id_of(html: str) -> str:
    return re.search(r"<code>(key_\w+)</code>", html).group(1)  # type: ignore[union-attr]


async def chat(dash: Dash, key: str) -> int:
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(dash.app), base_url="http://127.0.0.1:8000"
    ) as c:
        return (await c.post("/v1/chat/completions", json=chat_body(), headers=key_headers(key))).status_code


async def test_a_created_key_is_shown_once_and_never_again(dash: Dash) -> None:
    browser = await dash.signed_in(await dash.person())
    created = await post_form(browser, "/app/keys", "/app/keys", name="backend", scopes=["chat", "models"])
    assert created.status_code == 200 and created.headers["cache-control"] == "no-store"
    key = secret_of(created.text)
    assert key.startswith("sk_test_") and len(key) == 48
    assert 'data-copy="secret-value"' in created.text and "never again" in created.text
    assert await chat(dash, key) == 200
    for path in ("/app/keys", "/app", "/app/audit", f"/app/keys/{key_id_of(created.text)}/revoke"):
        later = await browser.get(path)
        assert later.status_code == 200 and key not in later.text and key[-20:] not in later.text, path
    listed = await browser.get("/app/keys")
    assert f"sk_test_…{key[-4:]}" in listed.text and "backend" in listed.text


async def test_the_key_list_says_when_each_key_was_last_used(dash: Dash) -> None:
    browser = await dash.signed_in(await dash.person())
    created = await post_form(browser, "/app/keys", "/app/keys", name="used", scopes=["chat"])
    key, key_id = secret_of(created.text), key_id_of(created.text)

    def last_used(html: str) -> str:
        row = re.search(rf'data-key-id="{key_id}">(.*?)</tr>', html, re.S)
        assert row, "no row of the key"
        return re.search(r'data-test="key-last-used">([^<]*)<', row.group(1)).group(1)  # type: ignore[union-attr]

    assert last_used((await browser.get("/app/keys")).text) == "never"
    dash.clock.advance(3600)
    assert await chat(dash, key) == 200
    assert last_used((await browser.get("/app/keys")).text) == when(dash.clock.now())


async def test_revoking_a_key_stops_it_at_once(dash: Dash) -> None:
    browser = await dash.signed_in(await dash.person())
    created = await post_form(browser, "/app/keys", "/app/keys", name="old", scopes=["chat"])
    key, key_id = secret_of(created.text), key_id_of(created.text)
    confirm = await browser.get(f"/app/keys/{key_id}/revoke")
    assert confirm.status_code == 200 and 'data-test="key-revoke-confirm"' in confirm.text
    assert await chat(dash, key) == 200  # looking at the confirmation changes nothing
    revoked = await post_form(browser, f"/app/keys/{key_id}/revoke", f"/app/keys/{key_id}/revoke")
    assert revoked.status_code == 303 and revoked.headers["location"] == f"/app/keys?revoked={key_id}"
    assert await chat(dash, key) == 401
    page = await browser.get(revoked.headers["location"])
    assert "The key “old” is revoked" in page.text and "key-revoked" in page.text
    again = await browser.get(f"/app/keys/{key_id}/revoke")
    assert "key-revoke-confirm" not in again.text and "no longer works" in again.text


async def test_rotating_a_key_shows_the_new_one_once_and_stops_the_old(dash: Dash) -> None:
    browser = await dash.signed_in(await dash.person())
    created = await post_form(browser, "/app/keys", "/app/keys", name="svc", scopes=["chat"])
    old_key, old_id = secret_of(created.text), key_id_of(created.text)
    rotated = await post_form(browser, "/app/keys", f"/app/keys/{old_id}/rotate")
    assert rotated.status_code == 200 and rotated.headers["cache-control"] == "no-store"
    new_key = secret_of(rotated.text)
    assert new_key != old_key and f"It replaces <code>{old_id}</code>" in rotated.text
    assert await chat(dash, old_key) == 401 and await chat(dash, new_key) == 200
    listed = (await browser.get("/app/keys")).text
    assert "key-replaced" in listed and new_key not in listed


async def test_another_tenants_key_is_not_found(dash: Dash) -> None:
    owner, stranger = await dash.signed_in(await dash.person()), await dash.signed_in(await dash.person())
    key_id = key_id_of((await post_form(owner, "/app/keys", "/app/keys", name="mine", scopes=["chat"])).text)
    assert (await stranger.get(f"/app/keys/{key_id}/revoke")).status_code == 404
    refused = await post_form(stranger, "/app/keys", f"/app/keys/{key_id}/revoke")
    assert refused.status_code == 404 and "not_found" in refused.text


async def test_key_actions_are_audited_and_an_admin_scope_is_flagged(dash: Dash) -> None:
    person = await dash.person(plan="enterprise")  # the plan that may issue admin-scoped keys
    browser = await dash.signed_in(person)
    created = await post_form(browser, "/app/keys", "/app/keys", name="ops", scopes=["chat", "admin"])
    key_id = key_id_of(created.text)
    await post_form(browser, "/app/keys", f"/app/keys/{key_id}/rotate")
    refused = await post_form(browser, "/app/keys", "/app/keys", name="bad", scopes=["chat", "nope"])
    assert refused.status_code == 400 and 'data-test="form-error"' in refused.text
    async with dash.app.state.services.db.session() as session:
        rows = (
            await session.execute(select(AuditRecord).where(AuditRecord.tenant_id == person.tenant_id))
        ).scalars()
        entries = {(r.action, r.outcome): r for r in rows}
    create = entries[("api_key.create", "ok")]
    assert create.actor == person.user_id and create.target == key_id and create.flagged
    assert create.details["scopes"] == ["chat", "admin"] and create.details["via"] == "dashboard"
    assert entries[("api_key.rotate", "ok")].target == key_id
    assert ("api_key.create", "failed") in entries
    audit_page = (await browser.get("/app/audit", params={"show": "flagged"})).text
    assert "api_key.create" in audit_page and "admin scope" in audit_page
