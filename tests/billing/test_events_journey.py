"""The journey with each provider (the official SDK against localstripe, and the sandbox): a tenant
whose trial is over subscribes (charged at once), the provider's signed events arrive, its plan
applies to its keys at once, and its webhook receives ``invoice.created`` from a real delivery to a
loopback receiver. (Subscribing within the trial: test_plan_checkout.py.)"""

from __future__ import annotations

import json

import pytest

from agent_server.admin.wiring import admin_services
from agent_server.webhooks.repository import EVENT_TYPES
from tests.admin.conftest import (
    Receiver,
    receiver,  # noqa: F401 (registers the fixture; read with getfixturevalue)
)
from tests.billing.conftest import Billed
from tests.billing.events_support import actions, end_trial, invoice, plan_of, send, subscription


async def test_subscribing_applies_the_plan_and_the_tenant_webhook_gets_invoice_created(
    billed: Billed, request: pytest.FixtureRequest
) -> None:
    hooks: Receiver = request.getfixturevalue("receiver")
    assert "invoice.created" in EVENT_TYPES
    tenant = billed.tenants["a"]
    hook = await billed.client.post(
        "/admin/webhooks", json={"url": hooks.url, "events": ["invoice.created"]}, headers=billed.auth()
    )
    assert hook.status_code == 201, hook.text
    key = await billed.client.post(
        "/admin/api-keys", json={"name": "ci", "scopes": ["chat", "models"]}, headers=billed.auth()
    )
    headers = {"Authorization": f"Bearer {key.json()['key']}"}
    professional = (await billed.client.get("/v1/models", headers=headers)).json()["data"]
    assert "gpt-4o" in {m["id"] for m in professional}

    await end_trial(billed, tenant)  # sandbox keys: still served
    checkout = (await billed.post("create-checkout", {"plan_id": "starter"})).json()
    assert checkout["first_charge_at"] is None  # no trial left: charged at payment
    await billed.pay(checkout)
    exchanged = await billed.post("exchange-redirect", {"session_ref": checkout["session_ref"]})
    assert exchanged.status_code == 200, exchanged.text
    await billed.relay()  # localstripe's signed events; the sandbox's arrived in-process already

    status = (await billed.get("status")).json()
    assert status["plan"]["id"] == "starter" and status["standing"]["state"] == "active"
    assert await plan_of(billed, tenant) == "starter"
    billed.clock.advance(billed.app.state.services.settings.key_cache_ttl_seconds)  # the key cache's TTL
    starter = (await billed.client.get("/v1/models", headers=headers)).json()["data"]
    assert "gpt-4o" not in {m["id"] for m in starter}  # the starter plan's models, at once

    invoices = (await billed.get("invoices")).json()["data"]
    assert invoices and invoices[0]["amount_due_minor"] == 4900
    assert await admin_services(billed.app.state.services).worker.tick() >= 1
    sent = [json.loads(r.body) for r in hooks.requests]
    assert {s["type"] for s in sent} == {"invoice.created"}
    assert {s["data"]["invoice_id"] for s in sent} == {i["id"] for i in invoices}
    assert sent[0]["tenant_id"] == tenant and sent[0]["data"]["currency"] == "EUR"
    assert sent[0]["data"]["amount_cents"] == 4900
    assert "billing.access_restored" in await actions(billed, tenant)  # the ended trial's refusal


async def test_an_invoice_created_event_reaches_only_its_tenants_webhook(
    billed: Billed, request: pytest.FixtureRequest
) -> None:
    hooks: Receiver = request.getfixturevalue("receiver")
    for who in ("a_admin", "b_admin"):
        hook = await billed.client.post(
            "/admin/webhooks",
            json={"url": hooks.url, "events": ["invoice.created"]},
            headers=billed.auth(who),
        )
        assert hook.status_code == 201, hook.text
    tenant = billed.tenants["b"]
    await send(billed, "customer.subscription.created", subscription(tenant))
    await send(billed, "invoice.created", invoice(tenant, amount=1234))
    await send(billed, "invoice.finalized", invoice(tenant, amount=1234))  # no second webhook
    assert await admin_services(billed.app.state.services).worker.tick() == 1
    [received] = hooks.requests
    body = json.loads(received.body)
    assert body["tenant_id"] == tenant and body["data"] == {
        "invoice_id": "in_test_1",
        "amount_cents": 1234,
        "currency": "EUR",
    }
