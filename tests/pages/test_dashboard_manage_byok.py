"""Provider keys (bring your own key) in the dashboard: add one (shown only by its last four
characters, stored encrypted), replace it, delete it after a confirmation; the JSON API sees the same;
a plan without the feature shows the form disabled with the plan that has it."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import pytest
from sqlalchemy import select

from agent_server.foundation.settings import Settings
from agent_server.foundation.settings_llm import UpstreamConfig
from agent_server.gateway.tables import ProviderKey
from tests.pages.dashboard import Dash, dashboard_world, post_form
from tests.pages.manage import assert_page, disabled_fieldset, error_message, notice

FIRST, SECOND = "sk-tenant-own-acme-7f3a", "sk-tenant-own-acme-91bc"
ACME = UpstreamConfig.model_validate(
    {
        "name": "acme-eu",
        "provider": "acme",
        "base_url": "http://127.0.0.1:9/v1",
        "api_key": "sk-platform-acme",
        "models": {"acme-own": {"upstream": "acme-own-v2", "byok": True}},
    }
)


@pytest.fixture
async def dash(settings: Settings) -> AsyncIterator[Dash]:
    async with dashboard_world(settings, upstreams=[ACME]) as world:
        yield world


def hint_of(text: str) -> str:
    start = text.index('data-test="byok-hint">')
    return text[start + len('data-test="byok-hint">') : text.index("</dd>", start)]


async def test_a_provider_key_is_added_replaced_and_deleted(dash: Dash) -> None:
    person = await dash.person(plan="enterprise")
    browser = await dash.signed_in(person)
    shown = assert_page(await browser.get("/app/provider-keys"))
    assert hint_of(shown) == "none" and "<code>acme-own</code>" in shown
    assert not disabled_fieldset(shown, "/app/provider-keys/acme")

    short = await post_form(browser, "/app/provider-keys", "/app/provider-keys/acme", api_key="short")
    assert "api_key" in error_message(assert_page(short, 400))
    saved = await post_form(browser, "/app/provider-keys", "/app/provider-keys/acme", api_key=f" {FIRST} ")
    assert saved.status_code == 303
    shown = assert_page(await browser.get(saved.headers["location"]))
    assert "The acme key is saved" in notice(shown)
    assert hint_of(shown).startswith("<code>…7f3a</code>") and FIRST not in shown
    token = {"Authorization": f"Bearer {browser.cookies['agentgate_session']}"}
    assert (await browser.get("/admin/byok/acme", headers=token)).json()["hint"] == "…7f3a"

    replaced = await post_form(browser, "/app/provider-keys", "/app/provider-keys/acme", api_key=SECOND)
    assert hint_of(assert_page(await browser.get(replaced.headers["location"]))).startswith(
        "<code>…91bc</code>"
    )
    async with dash.app.state.services.db.session() as session:
        row = (await session.execute(select(ProviderKey))).scalars().one()
    assert (
        SECOND not in row.secret_encrypted
        and dash.app.state.gateway.byok._box().decrypt(row.secret_encrypted) == SECOND
    )

    confirm = assert_page(await browser.get("/app/provider-keys/acme/delete"))
    assert "<code>acme-own</code>" in confirm and 'data-test="byok-delete-confirm"' in confirm
    deleted = await post_form(browser, "/app/provider-keys/acme/delete", "/app/provider-keys/acme/delete")
    shown = assert_page(await browser.get(deleted.headers["location"]))
    assert "The acme key is deleted" in notice(shown) and hint_of(shown) == "none"
    assert (await browser.get("/admin/byok/acme", headers=token)).status_code == 404
    audit = (await browser.get("/app/audit", params={"action": "byok.put"})).text
    assert audit.count('data-test="audit-row"') == 3 and FIRST not in audit  # the refused one too


async def test_unknown_providers_and_another_organisations_key(dash: Dash) -> None:
    owner = await dash.signed_in(await dash.person(plan="enterprise"))
    await post_form(owner, "/app/provider-keys", "/app/provider-keys/acme", api_key=FIRST)
    stranger = await dash.signed_in(await dash.person(plan="enterprise"))
    assert (await stranger.get("/app/provider-keys/acme/delete")).status_code == 404  # none of its own
    assert hint_of(assert_page(await stranger.get("/app/provider-keys"))) == "none"
    unknown = await post_form(owner, "/app/provider-keys", "/app/provider-keys/nobody", api_key=FIRST)
    assert "No provider &#39;nobody&#39;" in assert_page(unknown, 404)


async def test_a_plan_without_own_keys_shows_the_form_disabled(dash: Dash) -> None:
    browser = await dash.signed_in(await dash.person(plan="professional"))
    shown = assert_page(await browser.get("/app/provider-keys"))
    gate = re.search(r'data-test="plan-gate-byok">([\s\S]*?)</div>', shown).group(1)  # type: ignore[union-attr]
    assert "The Professional plan does not include your own provider keys." in gate
    assert "The Enterprise plan does" in gate and "byok" not in gate
    assert disabled_fieldset(shown, "/app/provider-keys/acme")
    crafted = await post_form(browser, "/app/provider-keys", "/app/provider-keys/acme", api_key=FIRST)
    assert "plan" in error_message(assert_page(crafted, 403))
