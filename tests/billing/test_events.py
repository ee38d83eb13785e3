"""``POST /<segment>/webhooks`` with each provider's signature: checked, applied once, in any order."""

from __future__ import annotations

import asyncio
import json

from sqlalchemy import select
from stripe import WebhookSignature

from agent_server.billing.tables import BillingEvent, Invoice
from tests.billing.conftest import SEGMENT, Billed
from tests.billing.events_support import (
    account,
    actions,
    event_rows,
    invoice,
    new_id,
    plan_of,
    secret_of,
    send,
    subscription,
)
from tests.billing.localstripe import event, post_event, webhook_secret


async def test_a_bad_signature_or_an_old_timestamp_changes_nothing(billed: Billed) -> None:
    tenant = billed.tenants["a"]
    body = subscription(tenant, plan_id="starter")
    refused = [
        await send(billed, "customer.subscription.created", body, secret=webhook_secret()),
        await send(billed, "customer.subscription.created", body, signed_at=int(billed.clock.now()) - 301),
        await send(billed, "customer.subscription.created", body, signed_at=int(billed.clock.now()) + 301),
        await billed.client.post(
            "/billing_provider/webhooks", json=event("customer.subscription.created", body)
        ),
    ]
    assert [r.status_code for r in refused] == [400, 400, 400, 400]
    codes = [r.json()["error"]["code"] for r in refused]
    assert (
        codes[0] == codes[3] == "invalid_signature" and codes[1] == codes[2] == "timestamp_outside_tolerance"
    )
    assert "type" in refused[0].json()["error"]  # the gateway envelope
    assert await event_rows(billed) == 0 and await account(billed, tenant) is None
    assert await plan_of(billed, tenant) == "professional"
    within = await send(
        billed, "customer.subscription.created", body, signed_at=int(billed.clock.now()) - 299
    )
    assert within.status_code == 200 and within.json()["outcome"] == "applied"


async def test_a_header_with_a_second_timestamp_is_refused(billed: Billed) -> None:
    """A captured hour-old delivery with a fresh ``t`` beside its own: the SDK would verify the old
    one while a window check could read the fresh one. Any header with two timestamps is refused."""
    tenant, now = billed.tenants["a"], int(billed.clock.now())
    old = now - 3600
    captured = event("customer.subscription.updated", subscription(tenant, plan_id="starter"), created=old)
    payload = json.dumps(captured).encode()
    signed = WebhookSignature.generate_signature_header(payload.decode(), secret_of(billed), timestamp=old)
    mac = signed.split("v1=")[1]
    for header in (f"v1={mac}, t={now},t={old}", f"t={old},t={now},v1={mac}", f"t={old},v1={mac}, t={now}"):
        answer = await post_event(billed.client, f"/{SEGMENT}/webhooks", payload, "", signature=header)
        assert answer.status_code == 400, (header, answer.text)
        assert answer.json()["error"]["code"] == "invalid_signature"
        assert "exactly one timestamp" in answer.json()["error"]["message"]
    as_captured = await post_event(billed.client, f"/{SEGMENT}/webhooks", payload, "", signature=signed)
    assert as_captured.json()["error"]["code"] == "timestamp_outside_tolerance"
    assert await event_rows(billed) == 0 and await plan_of(billed, tenant) == "professional"


async def test_a_replayed_event_id_changes_nothing(billed: Billed) -> None:
    tenant, now = billed.tenants["a"], int(billed.clock.now())
    first = event("customer.subscription.created", subscription(tenant, plan_id="starter"), created=now - 10)
    answer = await send(billed, "", {}, raw=first)
    assert answer.json() == {"received": True, "id": first["id"], "type": first["type"], "outcome": "applied"}
    assert await plan_of(billed, tenant) == "starter"
    await send(
        billed, "customer.subscription.updated", subscription(tenant, plan_id="professional"), created=now
    )
    assert await plan_of(billed, tenant) == "professional"

    replayed = await send(billed, "", {}, raw=first)  # a fresh signature on the old event
    assert replayed.status_code == 200 and replayed.json()["outcome"] == "already_applied"
    assert await plan_of(billed, tenant) == "professional"
    assert await event_rows(billed) == 2
    applied = await actions(billed, tenant, "billing.event.")
    assert applied == [
        "billing.event.customer.subscription.created",
        "billing.event.customer.subscription.updated",
    ]


async def test_one_event_delivered_twice_at_once_is_applied_once(billed: Billed) -> None:
    tenant = billed.tenants["a"]
    same = event("invoice.created", invoice(tenant), created=int(billed.clock.now()))
    await send(billed, "customer.subscription.created", subscription(tenant))
    answers = await asyncio.gather(send(billed, "", {}, raw=same), send(billed, "", {}, raw=same))
    assert sorted(a.json()["outcome"] for a in answers) == ["already_applied", "applied"]
    assert (await actions(billed, tenant, "billing.event.invoice")).count(
        "billing.event.invoice.created"
    ) == 1


async def test_subscription_events_out_of_order_do_not_roll_state_back(billed: Billed) -> None:
    tenant, now = billed.tenants["a"], int(billed.clock.now())
    canceled = subscription(tenant, status="canceled", plan_id="starter")
    await send(billed, "customer.subscription.deleted", canceled, created=now)
    late = await send(
        billed, "customer.subscription.created", subscription(tenant, plan_id="starter"), created=now - 60
    )
    assert late.json()["outcome"] == "stale"
    found = await account(billed, tenant)
    assert (
        found is not None and found.subscription_status == "canceled" and found.subscription_event_at == now
    )
    # A newer subscription of the same customer replaces the ended one; a late event of the old one does not.
    newer = subscription(tenant, sub_id="sub_test_2", plan_id="professional")
    assert (await send(billed, "customer.subscription.created", newer, created=now + 5)).json()[
        "outcome"
    ] == "applied"
    old = subscription(tenant, status="past_due", plan_id="starter")
    assert (await send(billed, "customer.subscription.updated", old, created=now + 1)).json()[
        "outcome"
    ] == "stale"
    found = await account(billed, tenant)
    assert found is not None and (found.subscription_id, found.subscription_status) == (
        "sub_test_2",
        "active",
    )


async def test_a_paid_invoice_never_goes_back_to_open(billed: Billed) -> None:
    tenant, now = billed.tenants["a"], int(billed.clock.now())
    await send(billed, "customer.subscription.created", subscription(tenant), created=now - 100)
    await send(billed, "invoice.paid", invoice(tenant, status="paid"), created=now)
    await send(billed, "invoice.created", invoice(tenant, status="draft"), created=now - 50)
    await send(billed, "invoice.payment_failed", invoice(tenant, status="open"), created=now - 40)
    async with billed.app.state.services.db.session() as session:
        row = await session.get(Invoice, "in_test_1")
    assert row is not None and (row.status, row.amount_paid_minor, row.currency) == ("paid", 4900, "EUR")


async def test_unknown_and_unmatched_events_are_recorded_and_acknowledged(billed: Billed) -> None:
    unknown = await send(billed, "customer.tax_id.created", {"id": "txi_1", "customer": "cus_nobody"})
    nobody = await send(billed, "invoice.created", {**invoice("ten_missing"), "customer": "cus_nobody"})
    assert (unknown.json()["outcome"], nobody.json()["outcome"]) == ("ignored", "unmatched")
    async with billed.app.state.services.db.session() as session:
        outcomes = set((await session.execute(select(BillingEvent.outcome))).scalars())
    assert outcomes == {"ignored", "unmatched"}
    assert set(await actions(billed)) == {
        "billing.event.customer.tax_id.created",
        "billing.event.invoice.created",
    }


async def test_payment_method_events_keep_brand_and_last4_only(billed: Billed) -> None:
    tenant = billed.tenants["a"]
    await send(billed, "customer.subscription.created", subscription(tenant))
    method = {
        "id": new_id("pm"),
        "object": "payment_method",
        "type": "card",
        "customer": "cus_test_1",
        "card": {
            "brand": "mastercard",
            "last4": "4444",
            "exp_month": 3,
            "exp_year": 2031,
            "fingerprint": "secretish",
        },
    }
    assert (await send(billed, "payment_method.attached", method)).json()["outcome"] == "applied"
    found = await account(billed, tenant)
    assert found is not None and found.payment_method is not None
    assert (found.payment_method["brand"], found.payment_method["last4"]) == ("mastercard", "4444")
    assert "fingerprint" not in found.payment_method


async def test_a_checkout_completion_attaches_the_subscription_and_the_plan(billed: Billed) -> None:
    tenant = billed.tenants["b"]
    session = {
        "id": new_id("cs"),
        "object": "checkout.session",
        "mode": "subscription",
        "status": "complete",
        "customer": "cus_test_b",
        "subscription": "sub_test_b",
        "metadata": {"tenant_id": tenant, "plan_id": "starter"},
    }
    assert (await send(billed, "checkout.session.completed", session)).json()["outcome"] == "applied"
    found = await account(billed, tenant)
    assert found is not None and (found.customer_id, found.subscription_id) == ("cus_test_b", "sub_test_b")
    assert found.subscription_status == "active" and await plan_of(billed, tenant) == "starter"
    assert await plan_of(billed, billed.tenants["a"]) == "professional"  # no other tenant moved
