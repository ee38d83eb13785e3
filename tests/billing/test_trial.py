"""Trials end and renewals fail: live keys get 402 (through the ``openai`` SDK), sandbox keys keep
working, paying restores access at once; every transition is in ``status`` and the audit log."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import openai
import pytest
from openai import AsyncOpenAI

from tests.billing.conftest import SEGMENT
from tests.billing.events_support import (
    DAY,
    MODEL,
    Live,
    account,
    actions,
    end_trial,
    engine,
    invoice,
    send,
    subscription,
)
from tests.billing.events_support import live_billed as live_billed
from tests.conftest import BASE_URL

MESSAGES = [{"role": "user", "content": "Still there?"}]


@asynccontextmanager
async def sdk(live: Live, key: str) -> AsyncIterator[AsyncOpenAI]:
    async with (
        httpx.AsyncClient(transport=httpx.ASGITransport(live.app)) as http,
        AsyncOpenAI(base_url=f"{BASE_URL}/v1", api_key=key, http_client=http, max_retries=0) as client,
    ):
        yield client


async def chat(live: Live, key: str) -> str:
    async with sdk(live, key) as client:
        answer = await client.chat.completions.create(model=MODEL, messages=MESSAGES)  # type: ignore[arg-type]
    return answer.choices[0].message.content or ""


async def refusal(live: Live, key: str) -> openai.APIStatusError:
    with pytest.raises(openai.APIStatusError) as refused:
        await chat(live, key)
    return refused.value


async def standing(live: Live) -> dict:
    answer = await live.get("status")
    assert answer.status_code == 200, answer.text
    return answer.json()["standing"]


async def subscribe(live: Live, plan_id: str = "starter", card: str = "pays") -> None:
    checkout = (await live.post("create-checkout", {"plan_id": plan_id})).json()
    await live.pay(checkout, card)
    exchanged = await live.post("exchange-redirect", {"session_ref": checkout["session_ref"]})
    assert exchanged.status_code == 200, exchanged.text
    await live.relay()


async def test_after_the_trial_live_keys_get_402_until_the_tenant_subscribes(live_billed: Live) -> None:
    live, tenant = live_billed, live_billed.tenants["a"]
    live_key, sandbox_key = await live.keys()
    assert live_key.startswith("sk_live_") and sandbox_key.startswith("sk_test_")
    assert await chat(live, live_key)
    assert (await standing(live))["state"] == "trial"

    await end_trial(live, tenant)
    error = await refusal(live, live_key)
    assert error.status_code == 402 and error.code == "trial_ended"
    assert f"{BASE_URL}/{SEGMENT}/status" in error.message
    assert await chat(live, sandbox_key)  # sandbox keys keep working
    now = await standing(live)
    assert now["state"] == "trial_ended" and now["code"] == "trial_ended" and now["reason"]
    await engine(live).gate.scan()  # announced once, whatever the number of scans
    assert (await actions(live, tenant)).count("billing.trial_ended") == 1

    await subscribe(live)
    assert await chat(live, live_key)  # at once: the completion event re-read the tenant, no scan
    assert (await standing(live))["state"] == "active"
    assert "billing.access_restored" in await actions(live, tenant)


async def fail_renewal(live: Live, tenant: str) -> None:
    """The next renewal's payment fails: the sandbox renews at the period's end with a card that
    declines renewals; with localstripe (no clock to move) the provider's two events are sent signed."""
    found = await account(live, tenant)
    assert found is not None and found.current_period_end is not None
    live.advance(found.current_period_end.timestamp() - live.clock.now() + 1)
    if live.stripe is None:
        assert await live.app.state.billing.provider.advance() == 1
        return
    sub_id, customer = found.subscription_id or "", found.customer_id or ""
    failed = {**invoice(tenant, invoice_id="in_renewal", sub_id=sub_id), "customer": customer}
    await send(live, "invoice.payment_failed", failed)
    overdue = subscription(
        tenant, sub_id=sub_id, status="past_due", customer=customer, start=int(live.clock.now())
    )
    await send(live, "customer.subscription.updated", overdue)


async def pay_again(live: Live, tenant: str) -> None:
    found = await account(live, tenant)
    assert found is not None
    if live.stripe is None:
        assert (
            await live.app.state.billing.provider.pay_open_invoices(found.customer_id, "4242424242424242")
            == 1
        )
        return
    sub_id, customer = found.subscription_id or "", found.customer_id or ""
    paid = {**invoice(tenant, invoice_id="in_renewal", sub_id=sub_id, status="paid"), "customer": customer}
    await send(live, "invoice.paid", paid)
    active = subscription(tenant, sub_id=sub_id, customer=customer, start=int(live.clock.now()) - DAY)
    await send(live, "customer.subscription.updated", active)


async def test_a_failed_renewal_gives_grace_then_402_payment_overdue(live_billed: Live) -> None:
    live, tenant = live_billed, live_billed.tenants["a"]
    live_key, sandbox_key = await live.keys()
    await subscribe(live, card="renewals_fail" if live.stripe is None else "pays")
    await fail_renewal(live, tenant)
    grace = await standing(live)
    assert grace["state"] == "grace" and grace["grace_until"]
    assert await chat(live, live_key)  # the grace period: access continues
    assert "billing.grace_started" in await actions(live, tenant)

    settings = live.app.state.services.settings
    live.advance(settings.billing_grace_days * DAY)
    await engine(live).gate.scan()
    error = await refusal(live, live_key)
    assert error.status_code == 402 and error.code == "payment_overdue"
    assert f"/{SEGMENT}/status" in error.message
    assert await chat(live, sandbox_key)
    assert (await standing(live))["state"] == "payment_overdue"
    assert "billing.payment_overdue" in await actions(live, tenant)

    await pay_again(live, tenant)
    assert await chat(live, live_key)
    paid = await standing(live)
    assert paid["state"] == "active" and paid["grace_until"] is None
    assert "billing.access_restored" in await actions(live, tenant)
