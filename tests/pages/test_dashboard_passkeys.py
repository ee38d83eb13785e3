"""Passkeys in the dashboard with a software authenticator (what the page's module does in a
browser): add one while signed in, sign in with it, rename and remove it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from agent_server.foundation.settings import Settings
from tests.accounts.authenticator import SoftAuthenticator
from tests.pages.dashboard import LOCALHOST, Dash, csrf_of, dashboard_world, post_form


@pytest.fixture
async def dash(settings: Settings) -> AsyncIterator[Dash]:
    async with dashboard_world(settings) as world:
        yield world


async def test_add_a_passkey_then_sign_in_with_it_rename_and_remove_it(dash: Dash) -> None:
    device = SoftAuthenticator(LOCALHOST)  # sandbox: the relying party is the host the page is at
    person = await dash.person()
    browser = await dash.signed_in(person, base_url=LOCALHOST)
    page = await browser.get("/app/passkeys")
    assert 'data-test="passkey-add"' in page.text and 'data-test="passkeys-empty"' in page.text
    token = csrf_of(page.text)
    started = await browser.post(
        "/app/passkeys/options", data={"csrf_token": token}, headers={"Accept": "application/json"}
    )
    assert started.status_code == 200 and started.headers["cache-control"] == "no-store"
    credential = device.create(started.json()["options"])
    saved = await browser.post("/app/passkeys", data={"csrf_token": token, "name": "Laptop",
                                                      "credential": json.dumps(credential)})  # fmt: skip
    assert saved.status_code == 201 and saved.json()["name"] == "Laptop"
    listed = await browser.get("/app/passkeys")
    assert listed.text.count('data-test="passkey-row"') == 1 and "Laptop" in listed.text

    fresh = dash.browser("10.0.0.8", base_url=LOCALHOST)
    login = await fresh.get("/app/login")
    options = (await fresh.post("/admin/auth/passkey/options", json={})).json()  # as passkey-login.js
    signed = await fresh.post("/admin/auth/passkey", json={"state": options["state"],
                                                          "credential": device.get(options["options"])})  # fmt: skip
    assert signed.status_code == 200
    session = await fresh.post("/app/session", data={"csrf_token": csrf_of(login.text), "next": "/app/passkeys",
                                                      "token": signed.json()["access_token"]})  # fmt: skip
    assert session.status_code == 303 and session.headers["location"] == "/app/passkeys"
    assert "agentgate_session=ey" in session.headers["set-cookie"]
    mine = await fresh.get("/app/passkeys")
    assert mine.status_code == 200 and "Laptop" in mine.text

    passkey_id = saved.json()["id"]
    renamed = await post_form(
        fresh, "/app/passkeys", f"/app/passkeys/{passkey_id}/rename", name="Work laptop"
    )
    assert renamed.status_code == 303 and "Work laptop" in (await fresh.get("/app/passkeys")).text
    removed = await post_form(fresh, "/app/passkeys", f"/app/passkeys/{passkey_id}/delete")
    assert (
        removed.status_code == 303 and 'data-test="passkeys-empty"' in (await fresh.get("/app/passkeys")).text
    )


async def test_adding_a_passkey_needs_a_recent_sign_in(dash: Dash) -> None:
    browser = await dash.signed_in(await dash.person(), base_url=LOCALHOST)
    dash.clock.advance(11 * 60)
    page = await browser.get("/app/passkeys")
    assert 'data-test="passkey-reauth"' in page.text and 'data-test="passkey-add"' not in page.text
    refused = await browser.post("/app/passkeys/options", data={"csrf_token": csrf_of(page.text)},
                                 headers={"Accept": "application/json"})  # fmt: skip
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "RECENT_SIGN_IN_REQUIRED"
    again = await browser.get("/app/login", params={"reauth": "1", "next": "/app/passkeys"})
    assert again.status_code == 200 and 'data-test="login-form"' in again.text  # signed in, asked again


async def test_a_session_needs_a_live_admin_token_and_the_forms_token(dash: Dash) -> None:
    browser = dash.browser()
    login = await browser.get("/app/login")
    forged = await browser.post("/app/session", data={"csrf_token": csrf_of(login.text), "token": "ey.x.y"})
    assert forged.status_code == 401 and "agentgate_session" not in forged.headers.get("set-cookie", "")
    person = await dash.person()
    token = (await browser.post("/admin/auth/login", json={"email": person.email,
                                                           "password": "correct horse battery staple"})).json()  # fmt: skip
    unsigned = await browser.post("/app/session", data={"token": token["access_token"]})
    assert unsigned.status_code == 403  # login CSRF: a session is only started from this site's form
