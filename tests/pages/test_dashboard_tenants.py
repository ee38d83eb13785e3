"""The platform's tenant list (/app/tenants): for platform admins only, searched by name or id and
filtered by plan with each tenant's plan, standing and trial end; its form creates a tenant through
the service of POST /admin/platform/tenants, audited under the new tenant, inviting its first admin."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from agent_server.admin.wiring import admin_services
from agent_server.foundation.settings import Settings
from tests.pages.dashboard import Dash, csrf_of, dashboard_world, post_form
from tests.pages.html import parse

PLATFORM = ("platform:admin", "tenant:admin")


@pytest.fixture
async def dash(settings: Settings) -> AsyncIterator[Dash]:
    async with dashboard_world(settings) as world:
        yield world


def rows(html: str) -> dict[str, str]:
    """Tenant id -> the row's text."""
    return {
        e.attrs["data-tenant-id"]: " ".join(e.text.split())
        for e in parse(html).all("tr")
        if "data-tenant-id" in e.attrs
    }


async def test_a_platform_admin_creates_searches_and_filters_tenants(dash: Dash) -> None:
    admin = await dash.person(plan="enterprise", permissions=PLATFORM)
    browser = await dash.signed_in(admin)
    overview = await browser.get("/app")
    assert 'href="/app/tenants" data-test="nav-tenants"' in overview.text

    made = await post_form(
        browser,
        "/app/tenants",
        "/app/tenants",
        name="Lovelace Labs",
        plan_id="professional",
        admin_email="Ada@Lovelace.example",
    )
    assert made.status_code == 303 and made.headers["location"].startswith("/app/tenants?created=ten_")
    tenant_id = made.headers["location"].split("=", 1)[1]
    shown = await browser.get(made.headers["location"])
    notice = parse(shown.text).all("p")
    assert any("Created Lovelace Labs" in p.text and "invitation" in p.text for p in notice)
    assert "Lovelace Labs" in rows(shown.text)[tenant_id] and "In trial" in rows(shown.text)[tenant_id]
    assert "Professional" in rows(shown.text)[tenant_id]
    await post_form(browser, "/app/tenants", "/app/tenants", name="Babbage Engines", plan_id="starter")

    found = await browser.get("/app/tenants", params={"q": "LOVELACE"})
    assert list(rows(found.text)) == [tenant_id] and "1 matching tenant" in found.text
    by_id = await browser.get("/app/tenants", params={"q": tenant_id})
    assert list(rows(by_id.text)) == [tenant_id]
    starters = await browser.get("/app/tenants", params={"plan": "starter"})
    assert [text.startswith("Babbage Engines") for text in rows(starters.text).values()] == [True]
    contract = rows((await browser.get("/app/tenants", params={"q": admin.tenant_id})).text)[admin.tenant_id]
    # Enterprise is negotiated: without a contract end set by a platform admin, it is in its trial
    # like any plan (docs/billing.md, "Plans").
    assert "In trial" in contract
    nothing = await browser.get("/app/tenants", params={"q": "nobody"})
    assert 'data-test="tenants-empty"' in nothing.text

    audit = admin_services(dash.app.state.services).audit
    [entry] = await audit.list(tenant_id, action="platform.tenant.create")
    assert entry.actor == admin.user_id and entry.details["via"] == "dashboard"
    assert entry.details["invited"] is True and entry.details["by_tenant"] == admin.tenant_id


async def test_a_refused_tenant_is_shown_on_the_page_with_the_form_kept(dash: Dash) -> None:
    browser = await dash.signed_in(await dash.person(plan="enterprise", permissions=PLATFORM))
    await post_form(browser, "/app/tenants", "/app/tenants", name="Taken Name", plan_id="starter")
    again = await post_form(
        browser,
        "/app/tenants",
        "/app/tenants",
        name="Taken Name",
        plan_id="starter",
        admin_email="x@taken.example",
    )
    assert again.status_code == 409 and 'data-test="form-error"' in again.text
    assert "exists already" in again.text and 'value="x@taken.example"' in again.text
    bad_email = await post_form(
        browser, "/app/tenants", "/app/tenants", name="Other", plan_id="starter", admin_email="nope"
    )
    assert bad_email.status_code == 400 and "admin_email" in bad_email.text
    no_limit = await post_form(
        browser, "/app/tenants", "/app/tenants", name="Other", plan_id="starter", rate_limit_per_minute="0"
    )
    assert (
        no_limit.status_code == 400
        and "rate_limit_per_minute" in no_limit.text
        and 'value="0"' in no_limit.text
    )
    unknown_plan = await post_form(browser, "/app/tenants", "/app/tenants", name="Other", plan_id="gold")
    assert unknown_plan.status_code == 400 and "Unknown plan" in unknown_plan.text
    no_token = await browser.post("/app/tenants", data={"name": "Sneaky", "plan_id": "starter"})
    assert no_token.status_code == 403
    assert (
        "Sneaky" not in (await browser.get("/app/tenants", params={"q": "Sneaky"})).text.split("</h2>", 1)[1]
    )


async def test_the_tenant_list_is_for_platform_admins_only(dash: Dash) -> None:
    browser = await dash.signed_in(await dash.person())
    assert 'data-test="nav-tenants"' not in (await browser.get("/app")).text
    assert (await browser.get("/app/tenants")).status_code == 403
    token = csrf_of((await browser.get("/app/keys")).text)  # a valid form token: the permission refuses
    refused = await browser.post(
        "/app/tenants", data={"csrf_token": token, "name": "Mine", "plan_id": "starter"}
    )
    assert refused.status_code == 403
