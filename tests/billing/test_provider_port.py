"""The provider port, one contract for both adapters: the sandbox, and the official SDK against localstripe.

A subscription is made the way a tenant makes it (create-checkout, pay, exchange-redirect); the port's
other calls (plan change with proration, cancel, resume, invoice items, invoices, the card on file,
event signatures) are then called on the app's provider as the event pipeline and B2's routes do.
"""

from __future__ import annotations

import json
import time

import pytest

from agent_server.billing.port import Price
from agent_server.billing.signing import sign
from agent_server.foundation.errors import ValidationFailed
from tests.billing.conftest import Billed
from tests.billing.events_support import end_trial

PROFESSIONAL = Price("plan:professional:month", "Professional plan", 39_900, "EUR", "month")


async def subscribed(billed: Billed) -> tuple[str, str]:
    """(subscription id, customer id) of tenant A on Starter, paid at once (its trial is over)."""
    await end_trial(billed, billed.tenants["a"])
    checkout = (await billed.post("create-checkout", {"plan_id": "starter"})).json()
    await billed.pay(checkout)
    result = (await billed.post("exchange-redirect", {"session_ref": checkout["session_ref"]})).json()
    status = (await billed.get("status")).json()
    return result["subscription"]["id"], status["customer_id"]


async def pending_items(billed: Billed, customer_id: str) -> list[int]:
    """Amounts of the customer's invoice items not billed yet."""
    if billed.stripe is not None:
        return [
            i["amount"] for i in billed.stripe.get("/v1/invoiceitems", customer=customer_id).json()["data"]
        ]
    items = await billed.app.state.billing.provider.store.owned("invoiceitem", customer_id)
    return [i["amount"] for i in items if i["invoice"] is None]


async def test_plan_change_cancel_and_resume(billed: Billed) -> None:
    provider = billed.app.state.billing.provider
    subscription_id, customer_id = await subscribed(billed)
    changed = await provider.change_plan(subscription_id, PROFESSIONAL, "professional", prorate=True)
    assert (changed.id, changed.plan_id, changed.status) == (subscription_id, "professional", "active")
    credits = await pending_items(billed, customer_id)
    assert credits and min(credits) < 0  # the unused time on Starter is credited
    ending = await provider.cancel(subscription_id, at_period_end=True)
    assert ending.cancel_at_period_end is True and ending.status == "active"
    resumed = await provider.resume(subscription_id)
    assert resumed.cancel_at_period_end is False
    assert (await provider.subscription(subscription_id)).plan_id == "professional"
    ended = await provider.cancel(subscription_id, at_period_end=False)
    assert ended.status == "canceled"


async def test_invoice_items_invoices_and_the_card_on_file(billed: Billed) -> None:
    provider = billed.app.state.billing.provider
    _, customer_id = await subscribed(billed)
    item = await provider.add_invoice_item(customer_id, 1234, "EUR", "Usage, November", "usage-test-1")
    assert item and 1234 in await pending_items(billed, customer_id)
    invoices = await provider.invoices(customer_id, 10)
    assert [(i.status, i.amount_paid_minor, i.currency) for i in invoices] == [("paid", 4900, "EUR")]
    card = await provider.payment_method(customer_id)
    assert card["brand"] == "visa" and card["last4"] == "4242" and card["exp_year"] == 2030


async def test_prices_are_found_by_lookup_key(billed: Billed) -> None:
    provider = billed.app.state.billing.provider
    first = await provider.ensure_price(PROFESSIONAL)
    again = await provider.ensure_price(PROFESSIONAL)
    assert first.created is True and again.created is False and again.id == first.id
    repriced = await provider.ensure_price(
        Price("plan:professional:month", "Professional plan", 42_000, "EUR", "month")
    )
    assert repriced.created is True and repriced.id != first.id
    assert await provider.sync_price(PROFESSIONAL) in (
        first.id,
        (await provider.ensure_price(PROFESSIONAL)).id,
    )


async def test_events_are_accepted_only_signed_and_in_time(billed: Billed) -> None:
    provider = billed.app.state.billing.provider
    secret = billed.secret if billed.stripe is not None else provider.secret
    now = int(time.time())
    payload = json.dumps(
        {"id": "evt_1", "type": "invoice.paid", "created": now, "data": {"object": {}}}
    ).encode()
    assert provider.parse_event(payload, sign(payload, secret, now), now)["id"] == "evt_1"
    refused = [
        (sign(payload, "whsec_wrong", now), now, "invalid_signature"),
        (None, now, "invalid_signature"),
        (sign(payload + b" ", secret, now), now, "invalid_signature"),
        (sign(payload, secret, now - 301), now, "timestamp_outside_tolerance"),
        (sign(payload, secret, now + 301), now, "timestamp_outside_tolerance"),
    ]
    for signature, at, code in refused:
        with pytest.raises(ValidationFailed) as caught:
            provider.parse_event(payload, signature, at)
        assert caught.value.code == code
    with pytest.raises(ValidationFailed) as caught:
        provider.parse_event(b"[1]", sign(b"[1]", secret, now), now)
    assert caught.value.code == "invalid_payload"
