"""Passkeys on the quickstart address: browsers refuse WebAuthn on an IP address, so in sandbox mode the
relying party follows the host the page is at (``localhost`` for ``make run``'s 127.0.0.1), and pages
offer passkeys only where a browser can use them."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from agent_server.accounts.passkey_relying_party import RelyingParty
from agent_server.foundation.settings import Settings
from tests.accounts.authenticator import SoftAuthenticator
from tests.pages.dashboard import LOCALHOST, Dash, dashboard_world

LOGIN = "/app/login"


@pytest.fixture
async def dash(settings: Settings) -> AsyncIterator[Dash]:
    async with dashboard_world(settings) as world:  # public base URL http://127.0.0.1:8000, no RP setting
        yield world


async def test_passkeys_are_offered_at_localhost_and_pointed_to_from_the_ip_address(dash: Dash) -> None:
    at_ip = dash.browser()
    for path in (LOGIN, "/app/register"):
        page = (await at_ip.get(path)).text
        assert 'data-test="passkey-login"' not in page and 'data-test="register-method-passkey"' not in page
        assert f'<a href="{LOCALHOST}{path}">' in page and 'data-test="passkey-elsewhere"' in page, path
    at_name = dash.browser(base_url=LOCALHOST)
    assert 'data-test="passkey-login"' in (await at_name.get(LOGIN)).text
    assert 'data-test="register-method-passkey"' in (await at_name.get("/app/register")).text


async def test_a_passkey_made_at_localhost_belongs_to_localhost_and_signs_in_there(dash: Dash) -> None:
    browser = dash.browser(base_url=LOCALHOST)
    body = {
        "email": "grace@compilers.example",
        "organisation": "Compilers",
        "plan": "starter",
        "method": "passkey",
    }
    started = (await browser.post("/register", json=body)).json()
    assert started["passkey"]["options"]["rp"]["id"] == "localhost"
    device = SoftAuthenticator(LOCALHOST)
    credential = device.create(started["passkey"]["options"])
    saved = await browser.post(
        "/register/passkey", json={"registration_id": started["registration_id"], "credential": credential}
    )
    assert saved.status_code == 200
    options = (await browser.post("/admin/auth/passkey/options", json={})).json()
    assert options["options"]["rpId"] == "localhost"
    # the same answer from a page at the IP address is refused: its origin is not the ceremony's
    elsewhere = dash.browser()
    other = (await elsewhere.post("/admin/auth/passkey/options", json={})).json()
    assert other["options"]["rpId"] == "127.0.0.1"
    wrong = await elsewhere.post(
        "/admin/auth/passkey", json={"state": other["state"], "credential": device.get(options["options"])}
    )
    assert wrong.status_code == 401


def test_the_relying_party_follows_the_request_only_in_sandbox_without_a_configured_id(
    settings: Settings,
) -> None:
    sandbox = RelyingParty.from_settings(settings, "agentgate")
    assert sandbox.for_origin("http://localhost:8000").id == "localhost"
    assert "http://localhost:8000" in sandbox.for_origin("http://localhost:8000").origins
    assert sandbox.for_origin("http://127.0.0.1:8000") == sandbox  # an IP address is no relying party
    assert sandbox.usable_at("http://localhost:8000") and not sandbox.usable_at("http://127.0.0.1:8000")
    assert not sandbox.usable_at("http://gw.example:8000")  # not a secure context: http off loopback
    configured = RelyingParty.from_settings(settings.model_copy(update={"webauthn_rp_id": "gw.example"}), "x")
    assert configured.for_origin("http://localhost:8000").id == "gw.example"
    production = settings.model_copy(update={"mode": "production", "public_base_url": "https://gw.example"})
    fixed = RelyingParty.from_settings(production, "x")
    assert fixed.for_origin("https://evil.example").id == "gw.example" and fixed.usable_at(
        "https://gw.example"
    )
    assert not fixed.usable_at("https://evil.example")


def test_an_origin_urllib_cannot_split_is_no_relying_party(settings: Settings) -> None:
    sandbox = RelyingParty.from_settings(settings, "agentgate")
    for origin in ("http://[localhost", "http://localhost:99999"):  # anything a client sends as Origin
        assert sandbox.for_origin(origin) == sandbox
        assert not sandbox.usable_at(origin)
