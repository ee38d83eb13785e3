"""The sandbox provider: its confirmation page completes a checkout, its events are signed as Stripe signs
and go through our own webhooks route, sessions expire, renewals charge (and can fail), the portal pays."""

from __future__ import annotations

import json
import stat

import pytest
import stripe
from sqlalchemy import select

from agent_server.billing.sandbox.events import SECRET_FILE
from agent_server.billing.tables import BillingEvent
from http_facade.pages.security import PAGE_HEADERS
from tests.billing.conftest import CARDS, Billed
from tests.conftest import BASE_URL

pytestmark = pytest.mark.parametrize("provider", ["sandbox"])


def record_deliveries(billed: Billed) -> list[tuple[bytes, str]]:
    """Keep what the sandbox sends (the delivery to the webhooks route still happens)."""
    events = billed.app.state.billing.provider.events
    sent: list[tuple[bytes, str]] = []
    deliver = events.deliver

    async def recording(payload: bytes, signature: str) -> bool:
        sent.append((payload, signature))
        return await deliver(payload, signature)

    events.deliver = recording
    return sent


async def test_the_confirmation_page_shows_the_purchase_and_completes_it(billed: Billed) -> None:
    sent = record_deliveries(billed)
    checkout = (await billed.post("create-checkout", {"plan_id": "starter"})).json()
    page_path = checkout["url"].removeprefix(BASE_URL)
    page = await billed.client.get(page_path)
    assert page.status_code == 200 and "Starter plan" in page.text and "49.00 EUR" in page.text
    assert "nothing is charged" in page.text and page.headers["cache-control"] == "no-store"
    # In the trial: the first charge is at its end, as Stripe's Checkout with a trial_end says.
    trial_end = (await billed.get("status")).json()["trial_ends_at"]
    assert f"first on {trial_end[:10]} {trial_end[11:16]} UTC when the free trial ends" in page.text
    assert "Due today: 0.00 EUR" in page.text

    cancelled = await billed.client.post(page_path, data={"action": "cancel"})
    assert (
        cancelled.status_code == 303
        and cancelled.headers["location"] == "http://127.0.0.1:8000/app/billing?checkout=canceled"
    )
    declined = await billed.client.post(page_path, data={"action": "pay", "card": CARDS["declined"]})
    assert declined.status_code == 402 and "declined" in declined.text
    paid = await billed.client.post(page_path, data={"action": "pay", "card": CARDS["pays"]})
    assert paid.status_code == 303
    assert (
        paid.headers["location"] == f"http://127.0.0.1:8000/app/billing?session_ref={checkout['session_ref']}"
    )
    again = await billed.client.post(page_path, data={"action": "pay", "card": CARDS["pays"]})
    assert again.status_code == 409 and again.json()["error"]["code"] == "checkout_complete"
    assert "This checkout is complete" in (await billed.client.get(page_path)).text

    secret = (billed.app.state.services.settings.data_dir / SECRET_FILE).read_text().strip()
    types = []
    for payload, signature in sent:  # each one verifies with the official SDK, as Stripe's would
        event = stripe.Webhook.construct_event(payload, signature, secret)
        types.append(event["type"])
    assert types[0] == "payment_intent.payment_failed"  # the declined card
    assert {
        "customer.subscription.created",
        "invoice.created",
        "invoice.paid",
        "checkout.session.completed",
    } <= set(types)
    async with billed.app.state.services.db.session() as db:
        applied = {e.id: e.outcome for e in (await db.execute(select(BillingEvent))).scalars()}
    assert {json.loads(p)["id"] for p, _ in sent} <= set(applied)  # every one reached the pipeline
    status = (await billed.get("status")).json()
    assert status["plan"]["id"] == "starter" and status["subscription"]["status"] == "trialing"


async def test_the_sandbox_secret_is_generated_once_and_private(billed: Billed) -> None:
    path = billed.app.state.services.settings.data_dir / SECRET_FILE
    assert path.read_text().startswith("whsec_") and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert billed.app.state.billing.provider.secret == path.read_text().strip()


async def test_an_unpaid_checkout_expires_and_its_order_with_it(billed: Billed) -> None:
    order = (await billed.post("checkout", {"item_id": "mcp-server-development", "quantity": 2})).json()
    assert order["amount_minor"] == 258_000
    billed.advance(86_400 + 1)
    page = await billed.client.get(order["checkout_url"].removeprefix(BASE_URL))
    assert "This checkout is expired" in page.text
    exchanged = (await billed.post("exchange-redirect", {"session_ref": order["session_ref"]})).json()
    assert exchanged["status"] == "expired" and exchanged["order"]["status"] == "expired"
    late = await billed.client.post(
        order["checkout_url"].removeprefix(BASE_URL), data={"action": "pay", "card": CARDS["pays"]}
    )
    assert late.status_code == 409 and late.json()["error"]["code"] == "checkout_expired"


async def test_a_failed_renewal_is_paid_in_the_portal(billed: Billed) -> None:
    checkout = (await billed.post("create-checkout", {"plan_id": "starter"})).json()
    await billed.pay(checkout, card="renewals_fail")  # pays now, declines later charges
    provider = billed.app.state.billing.provider
    billed.advance(31 * 86_400)
    assert await provider.advance() == 1
    status = (await billed.get("status")).json()
    assert status["subscription"]["status"] == "past_due" and status["grace_until"] is not None
    invoices = (await billed.get("invoices")).json()["data"]
    assert [i["status"] for i in invoices] == ["open", "paid"]

    portal = (await billed.post("billing-portal", {})).json()
    path = portal["url"].removeprefix(BASE_URL)
    assert "past_due" in (await billed.client.get(path)).text
    paid = await billed.client.post(path, data={"action": "pay", "card": CARDS["pays"]})
    assert paid.status_code == 303
    status = (await billed.get("status")).json()
    assert status["subscription"]["status"] == "active" and status["grace_until"] is None
    assert status["payment_method"]["last4"] == "4242"
    assert [i["status"] for i in (await billed.get("invoices")).json()["data"]] == ["paid", "paid"]
    assert await provider.advance() == 0  # nothing else is due


def _directives(csp: str) -> dict[str, list[str]]:
    return {name: values for name, *values in (d.split() for d in csp.split(";") if d.strip())}


async def test_the_hosted_pages_cannot_be_framed_and_carry_the_sites_page_headers(billed: Billed) -> None:
    elsewhere = "http://localhost:3000/done?ref={CHECKOUT_SESSION_ID}"  # an allowed origin
    body = {"plan_id": "starter", "success_url": elsewhere}
    checkout = (await billed.post("create-checkout", body)).json()
    path = checkout["url"].removeprefix(BASE_URL)
    shown = await billed.client.get(path)
    declined = await billed.client.post(path, data={"action": "pay", "card": CARDS["declined"]})
    portal_url = (await billed.post("billing-portal", {})).json()["url"]
    portal = await billed.client.get(portal_url.removeprefix(BASE_URL))
    for page in (shown, declined, portal):
        for name, value in PAGE_HEADERS.items():
            if name != "Content-Security-Policy":
                assert page.headers[name] == value, (name, page.url)
        policy = _directives(page.headers["content-security-policy"])
        assert policy["frame-ancestors"] == ["'none'"] and policy["default-src"] == ["'self'"]
    # The checkout's answer redirects to the success or cancel URL: the policy lets the form go there.
    assert _directives(shown.headers["content-security-policy"])["form-action"] == [
        "'self'",
        "http://127.0.0.1:8000",
        "http://localhost:3000",
    ]
    assert _directives(portal.headers["content-security-policy"])["form-action"] == ["'self'"]
