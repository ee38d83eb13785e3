"""The Stripe journey over real sockets: a real uvicorn, the official SDK against localstripe, and
localstripe itself delivering its signed webhooks to our ``webhooks`` route (no relay by the test)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx
from sqlalchemy import update

from agent_server.foundation.settings import Settings
from agent_server.foundation.timeutil import utc
from agent_server.gateway import provision
from agent_server.gateway.tables import Tenant
from agent_server.storage import migrate
from agent_server.storage.db import Database
from tests.billing.conftest import provider_settings
from tests.billing.localstripe import LocalStripe, webhook_secret
from tests.conftest import LiveServer

PASSWORD = "violet-harbour-quantum-7391"


async def trial_over(settings: Settings, tenant_id: str) -> None:
    db = Database(settings)
    try:
        async with db.session() as session:
            ended = utc(time.time() - 86_400)
            await session.execute(update(Tenant).where(Tenant.id == tenant_id).values(trial_ends_at=ended))  # type: ignore[arg-type]
    finally:
        await db.dispose()


async def eventually(check: Callable[[], Awaitable[bool]], seconds: float = 15.0) -> None:
    """Wait for webhooks that localstripe sends on its own schedule, at most ``seconds``."""
    deadline = time.monotonic() + seconds
    while not await check():
        assert time.monotonic() < deadline, "the provider's webhooks did not arrive in time"
        await asyncio.sleep(0.1)


async def test_localstripe_delivers_the_signed_events_that_make_the_tenant_paid(
    tmp_path: Path, settings: Settings, localstripe: LocalStripe
) -> None:
    secret = webhook_secret()
    configured = provider_settings(settings, "stripe", localstripe, secret)
    migrate.upgrade(configured)  # as `agentgate migrate` would: the operator commands need the schema
    tenant = await provision.create_tenant(configured, "Journey", "professional")
    await trial_over(configured, tenant.id)  # charged at payment: a paid invoice to deliver
    await provision.create_user(configured, tenant.id, "owner@journey.example", PASSWORD, admin=True)
    with LiveServer(configured) as live:
        localstripe.register_webhook(f"{live.url}/billing_provider/webhooks", secret)
        async with httpx.AsyncClient(base_url=live.url, timeout=20) as client:
            login = await client.post(
                "/admin/auth/login", json={"email": "owner@journey.example", "password": PASSWORD}
            )
            headers = {"Authorization": f"Bearer {login.json()['access_token']}"}
            checkout = (
                await client.post(
                    "/billing_provider/create-checkout", json={"plan_id": "starter"}, headers=headers
                )
            ).json()
            assert checkout["flow"] == "setup_intent", checkout
            card = {
                "payment_method": "pm_card_visa",
                "client_secret": checkout["client_secret"],
                "key": "pk_test_x",
            }
            confirmed = await client.post(
                f"{localstripe.url}/v1/setup_intents/{checkout['session_ref']}/confirm", data=card
            )
            assert confirmed.json()["status"] == "succeeded"
            exchanged = await client.post(
                "/billing_provider/exchange-redirect",
                json={"session_ref": checkout["session_ref"]},
                headers=headers,
            )
            subscription = exchanged.json()["subscription"]
            assert subscription["status"] == "active"

            async def paid() -> bool:
                status = (await client.get("/billing_provider/status", headers=headers)).json()
                invoices = (await client.get("/billing_provider/invoices", headers=headers)).json()["data"]
                return (
                    status["plan"]["id"] == "starter"
                    and (status["subscription"] or {}).get("id") == subscription["id"]
                    and [i["status"] for i in invoices] == ["paid"]
                )

            await eventually(paid)
            held = localstripe.get(f"/v1/subscriptions/{subscription['id']}").json()
            assert held["metadata"] == {"tenant_id": tenant.id, "plan_id": "starter"}
            customer = localstripe.get(f"/v1/customers/{held['customer']}").json()
            assert (
                customer["metadata"]["tenant_id"] == tenant.id
                and customer["email"] == "owner@journey.example"
            )
