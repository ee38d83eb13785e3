"""Plan and billing in the dashboard, against the sandbox payment provider: subscribe through its
checkout and come back to the page, which shows the result; then change the plan and cancel."""

from __future__ import annotations

import html
import re
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import pytest

from agent_server.foundation.settings import Settings
from tests.conftest import BASE_URL
from tests.pages.dashboard import Dash, dashboard_world, post_form

SNAKE_CASE = re.compile(r"\b[a-z]+(?:_[a-z]+)+\b")  # trial_ends_at, past_due (ids like in_sbx_9f… aside)


def shown(page: str) -> str:
    """The text a person reads in the page's main part: no tags, entities decoded, spaces folded."""
    main = page[page.index("<main") : page.index("</main>")]
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", main)))


def charge_line(page: str) -> str:
    match = re.search(r'data-test="billing-next-charge">([^<]*)<', page)
    assert match, "no charge line on the page"
    return html.unescape(match.group(1))


@pytest.fixture
async def dash(settings: Settings) -> AsyncIterator[Dash]:
    async with dashboard_world(settings) as world:
        yield world


async def test_subscribe_through_the_checkout_then_change_and_cancel(dash: Dash) -> None:
    browser = await dash.signed_in(await dash.person(plan="starter"))
    page = await browser.get("/app/billing")
    assert page.status_code == 200 and 'data-test="billing-standing">Free trial' in page.text
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
    assert result.status_code == 200 and 'data-test="checkout-result">The checkout is complete' in result.text
    assert 'data-test="subscription-cancel"' in result.text and 'action="/app/billing/plan"' in result.text

    changed = await post_form(browser, "/app/billing", "/app/billing/plan", plan_id="professional")
    assert changed.status_code == 200 and "The plan is now Professional." in changed.text
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
        assert "session ref:" in page.text and "validation_error" in page.text, value  # names it


async def test_the_page_says_when_the_first_charge_happens_in_plain_words_and_one_money_format(
    dash: Dash,
) -> None:
    person = await dash.person(plan="starter")
    browser = await dash.signed_in(person)
    before = (await browser.get("/app/billing")).text
    trial_end = (await dash.app.state.billing.status.status(person.tenant_id))["trial_ends_at"]
    day = f"{trial_end[:10]} {trial_end[11:16]} UTC"
    assert (
        charge_line(before)
        == f"if you subscribe now, on {day}, when the free trial ends; nothing is charged before"
    )
    text = shown(before)
    assert "VAT not included in the prices: it is added to each invoice" in text
    assert "Starter: 49.00 EUR per month, excluding VAT" in text and "399.00 EUR per month" in text
    assert SNAKE_CASE.findall(text) == [], SNAKE_CASE.findall(text)

    started = await post_form(browser, "/app/billing", "/app/billing/checkout", plan_id="starter")
    paid = await browser.post(
        urlsplit(started.headers["location"]).path, data={"action": "pay", "card": "4242424242424242"}
    )
    await dash.app.state.services.events.drain()
    after = (await browser.get(f"/app/billing?{urlsplit(paid.headers['location']).query}")).text
    assert (
        charge_line(after)
        == f"49.00 EUR plus VAT on {day}, when the free trial ends; nothing is charged before"
    )
    text = shown(after)
    assert "the subscription is in its free trial" in text and "0.00 EUR paid" in text  # the trial's invoice
    assert SNAKE_CASE.findall(text) == [], SNAKE_CASE.findall(text)
