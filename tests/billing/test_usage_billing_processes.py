"""Two processes (two apps on one PostgreSQL database) closing the same billing period report it once:
the provider (the sandbox, whose objects live in that database, or one localstripe) holds one set
of invoice items."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from cryptography.fernet import Fernet
from sqlalchemy import select

from agent_server.billing.tables import BillingAccount, UsageReport
from agent_server.billing.usage_billing import SETTLE
from agent_server.foundation.clock import ManualClock
from agent_server.foundation.settings import Settings
from agent_server.foundation.timeutil import month_bounds, utc
from agent_server.gateway import repository as repo
from agent_server.gateway.service import Caller
from http_facade.app import create_app
from tests.billing.conftest import provider_settings
from tests.billing.localstripe import webhook_secret
from tests.billing.test_usage_billing import EXPECTED, USAGE
from tests.conftest import BASE_URL, running


async def test_two_processes_closing_one_period_report_it_once(
    provider: str, tmp_path: Path, postgres_url: str, request: pytest.FixtureRequest
) -> None:
    stripe = request.getfixturevalue("localstripe") if provider == "stripe" else None
    secret, clock = webhook_secret(), ManualClock(time.time())
    shared = {
        "database_url": postgres_url,
        "encryption_key": Fernet.generate_key().decode(),
        "redis_url": None,
    }
    apps = [
        create_app(
            provider_settings(
                Settings(data_dir=tmp_path / name, public_base_url=BASE_URL, **shared),
                provider,
                stripe,
                secret,
            ),
            clock=clock,
        )
        for name in ("one", "two")
    ]
    async with running(apps[0]), running(apps[1]):
        first = apps[0].state
        db = first.services.db
        tenant = await repo.create_tenant(db, clock.now(), "Payer", "professional")
        customer = await first.billing.provider.ensure_customer(tenant.id, "ops@payer.example", "Payer", None)
        async with db.session() as session:  # a customer without a subscription: billed per calendar month
            session.add(
                BillingAccount(
                    tenant_id=tenant.id, provider=provider, customer_id=customer, updated_at=utc(clock.now())
                )
            )
        record, key = repo.new_key(clock.now(), tenant.id, "live", ["chat"], "live")
        await repo.add_key(db, record)
        caller = Caller(await first.gateway.keys.authenticate(key), {}, 0.0)
        for model, prompt, completion in USAGE:
            await first.gateway.record(
                caller, "chat", model, 200, "test", prompt_tokens=prompt, completion_tokens=completion
            )
        await first.gateway.usage.flush()

        _, next_month = month_bounds(clock.now())
        clock.advance(next_month.timestamp() - clock.now() + SETTLE.total_seconds())
        passes = [app.state.billing.engine.usage.run_once() for app in apps for _ in range(2)]
        sent = await asyncio.gather(*passes)
        async with db.session() as session:
            [report] = (await session.execute(select(UsageReport))).scalars()
        if stripe is not None:
            items = stripe.get("/v1/invoiceitems", customer=customer, limit=100).json()["data"]
        else:
            items = await first.billing.provider.store.owned("invoiceitem", customer)

    assert sorted(len(ids) for ids in sent) == [0, 0, 0, 1]
    assert report.status == "reported" and report.amount_minor == sum(EXPECTED.values())
    assert sorted(item["amount"] for item in items) == sorted(EXPECTED.values())
    assert {item["id"] for item in items} == set(report.provider_refs)
