"""Plan and billing in the dashboard, against the sandbox payment provider: subscribe through its
checkout and come back to the page, which shows the result; then change the plan and cancel."""

from __future__ import annotations

from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import pytest

from agent_server.settings import Settings
from tests.conftest import BASE_URL
from tests.pages.dashboard import Dash, dashboard_world, post_form


@pytest.fixture
async def dash(settings: Settings) -> AsyncIterator[Dash]:
    async with dashboard_world(settings) as world:
        yield world


async def test_subscribe_through_the_checkout_then_change_and_cancel(dash: Dash) -> None:
    browser = await dash.signed_in(await dash.person(plan="starter"))
    page = await browser.get("/app/billing")
    assert page.status_code == 200 and 'data-test="billing-standing">trial' in page.text
    assert 'action="/app/billing/checkout"' in page.text and 'data-test="invoices-empty"' in page.text

    started = await post_form(browser, "/app/billing", "/app/billing/checkout", plan_id="starter")
    assert started.status_code == 303
    checkout = started.headers["location"]
    assert checkout.startswith(f"{BASE_URL}/") and "/sandbox/checkout/" in checkout
    paid = await browser.post(urlsplit(checkout).path, data={"action": "pay", "card": "4242424242424242"})
    assert paid.status_code == 303
    back = urlsplit(paid.headers["location"])
    assert back.path == "/app/billing" and back.query.startswith("session_ref=")
    await dash.app.state.services.events.drain()
    result = await browser.get(f"/app/billing?{back.query}")
    assert result.status_code == 200 and 'data-test="checkout-result">Checkout complete' in result.text
    assert 'data-test="subscription-cancel"' in result.text and 'action="/app/billing/plan"' in result.text

    changed = await post_form(browser, "/app/billing", "/app/billing/plan", plan_id="professional")
    assert changed.status_code == 200 and "The plan is now professional." in changed.text
    cancelled = await post_form(browser, "/app/billing", "/app/billing/subscription", action="cancel")
    assert cancelled.status_code == 200 and 'data-test="subscription-resume"' in cancelled.text
    audit = (await browser.get("/app/audit")).text
    assert "billing.subscription.change" in audit and "billing.subscription.cancel" in audit


async def test_a_cancelled_checkout_comes_back_to_the_page(dash: Dash) -> None:
    browser = await dash.signed_in(await dash.person(plan="starter"))
    started = await post_form(browser, "/app/billing", "/app/billing/checkout", plan_id="professional")
    gave_up = await browser.post(urlsplit(started.headers["location"]).path, data={"action": "cancel"})
    assert gave_up.headers["location"].endswith("/app/billing?checkout=canceled")
    page = await browser.get("/app/billing?checkout=canceled")
    assert 'data-test="billing-notice">The checkout was cancelled' in page.text
    unknown = await browser.get("/app/billing", params={"session_ref": "cs_nope"})
    assert unknown.status_code == 404 and 'data-test="form-error"' in unknown.text


async def test_a_malformed_session_ref_is_a_400_naming_it(dash: Dash) -> None:
    browser = await dash.signed_in(await dash.person(plan="starter"))
    for value in ("0", "ab", "a" * 201, "cs-1"):
        page = await browser.get("/app/billing", params={"session_ref": value})
        assert page.status_code == 400, (value, page.status_code)
        assert "Invalid query field &#39;session_ref&#39;" in page.text, value
