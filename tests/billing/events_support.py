"""What the event, trial, usage, subscription and schedule tests share.

- ``send``: a provider event in Stripe's shape, signed with the app's webhook secret (the sandbox's
  own, or the one registered for localstripe) and posted to ``/<segment>/webhooks``.
- ``live_billed``: like ``billed`` (conftest.py) but in production mode, so keys are ``sk_live_``
  (the sandbox provider is allowed there explicitly); ``Live.keys`` makes a live and a sandbox key.
- Readers of our state (account, tenant plan, audit actions, event rows) and ``end_trial``.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select, update

from agent_server.admin.tables import AuditRecord
from agent_server.billing.engine import BillingEngine
from agent_server.billing.tables import BillingAccount, BillingEvent
from agent_server.foundation.clock import ManualClock
from agent_server.foundation.settings import Settings
from agent_server.foundation.timeutil import utc
from agent_server.gateway import repository as repo
from agent_server.gateway.tables import Tenant
from http_facade.app import create_app
from tests.admin.conftest import populate
from tests.billing.conftest import SEGMENT, Billed, provider_settings
from tests.billing.localstripe import event, post_event, webhook_secret
from tests.conftest import BASE_URL, running

DAY = 86_400
MODEL = "agentgate-mock-small"
ADMINS = {"a": "a_admin", "b": "b_admin", "p": "platform"}  # tests/admin/conftest.py USERS


def secret_of(billed: Billed) -> str:
    return billed.secret if billed.stripe is not None else billed.app.state.billing.provider.secret


def engine(billed: Billed) -> BillingEngine:
    return billed.app.state.billing.engine


async def send(
    billed: Billed,
    type_: str,
    obj: dict[str, Any],
    *,
    created: int | None = None,
    id_: str | None = None,
    secret: str | None = None,
    signed_at: int | None = None,
    raw: dict[str, Any] | None = None,
) -> httpx.Response:
    """Sign and post one event; ``raw`` posts that exact event instead (a replay)."""
    body = raw or event(type_, obj, created=int(billed.clock.now()) if created is None else created, id_=id_)
    at = int(billed.clock.now()) if signed_at is None else signed_at
    return await post_event(
        billed.client, f"/{SEGMENT}/webhooks", body, secret or secret_of(billed), timestamp=at
    )


def subscription(
    tenant_id: str,
    *,
    sub_id: str = "sub_test_1",
    status: str = "active",
    plan_id: str = "starter",
    customer: str = "cus_test_1",
    start: int | None = None,
    days: int = 30,
    cancel_at_period_end: bool = False,
) -> dict[str, Any]:
    begin = int(time.time()) if start is None else start
    return {
        "id": sub_id,
        "object": "subscription",
        "customer": customer,
        "status": status,
        "metadata": {"tenant_id": tenant_id, "plan_id": plan_id},
        "current_period_start": begin,
        "current_period_end": begin + days * DAY,
        "cancel_at_period_end": cancel_at_period_end,
        "items": {
            "object": "list",
            "data": [{"id": "si_test_1", "price": {"lookup_key": f"plan:{plan_id}:month"}}],
        },
    }


def invoice(
    tenant_id: str,
    *,
    invoice_id: str = "in_test_1",
    status: str = "open",
    amount: int = 4900,
    sub_id: str = "sub_test_1",
) -> dict[str, Any]:
    return {
        "id": invoice_id,
        "object": "invoice",
        "customer": "cus_test_1",
        "subscription": sub_id,
        "status": status,
        "amount_due": amount,
        "amount_paid": amount if status == "paid" else 0,
        "currency": "eur",
        "metadata": {"tenant_id": tenant_id},
        "created": int(time.time()),
    }


async def account(billed: Billed, tenant_id: str) -> BillingAccount | None:
    async with billed.app.state.services.db.session() as session:
        return await session.get(BillingAccount, tenant_id)


async def plan_of(billed: Billed, tenant_id: str) -> str:
    async with billed.app.state.services.db.session() as session:
        tenant = await session.get(Tenant, tenant_id)
    assert tenant is not None
    return tenant.plan_id


async def actions(billed: Billed, tenant_id: str | None = None, prefix: str = "billing.") -> list[str]:
    """The tenant's audit actions starting with ``prefix``, oldest first."""
    query = select(AuditRecord.action).where(AuditRecord.action.startswith(prefix)).order_by(AuditRecord.id)  # type: ignore[union-attr,attr-defined]
    if tenant_id is not None:
        query = query.where(AuditRecord.tenant_id == tenant_id)
    async with billed.app.state.services.db.session() as session:
        return list((await session.execute(query)).scalars())


async def event_rows(billed: Billed) -> int:
    async with billed.app.state.services.db.session() as session:
        count = await session.scalar(
            select(func.count()).select_from(BillingEvent).where(BillingEvent.id.not_like("standing:%"))  # type: ignore[attr-defined]
        )
    return int(count or 0)


async def end_trial(billed: Billed, tenant_id: str) -> None:
    """Past the 14 days: the sandbox moves the service clock; with localstripe, whose events carry
    the real time, the trial is moved into the past instead (so their signatures stay in the window)."""
    if billed.stripe is None:
        billed.advance(15 * DAY)
    else:
        async with billed.app.state.services.db.session() as session:
            ended = utc(billed.clock.now() - DAY)
            await session.execute(update(Tenant).where(Tenant.id == tenant_id).values(trial_ends_at=ended))  # type: ignore[arg-type]
    await engine(billed).gate.scan()


@dataclass
class Live(Billed):
    async def keys(self, tenant: str = "a") -> tuple[str, str]:
        """(live key, sandbox key) of the tenant: the live one over HTTP, the sandbox one as a row
        (production mode issues live keys only)."""
        made = await self.client.post(
            "/admin/api-keys",
            json={"name": "live", "scopes": ["chat", "models"]},
            headers=self.auth(ADMINS[tenant]),
        )
        assert made.status_code == 201, made.text
        record, full = repo.new_key(
            self.clock.now(), self.tenants[tenant], "sandbox", ["chat", "models"], "test"
        )
        await repo.add_key(self.app.state.services.db, record)
        return made.json()["key"], full


@pytest.fixture
async def live_billed(
    provider: str, settings: Settings, request: pytest.FixtureRequest
) -> AsyncIterator[Live]:
    stripe = request.getfixturevalue("localstripe") if provider == "stripe" else None
    secret = webhook_secret()
    production = settings.model_copy(
        update={"mode": "production", "billing_allow_sandbox_in_production": True}
    )
    clock = ManualClock(time.time())
    application = create_app(provider_settings(production, provider, stripe, secret), clock=clock)
    async with running(application):
        tenants, users, tokens = await populate(application, clock)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(application), base_url=BASE_URL) as client:
            yield Live(
                app=application,
                client=client,
                clock=clock,
                provider=provider,
                tenants=tenants,
                users=users,
                tokens=tokens,
                stripe=stripe,
                secret=secret,
            )


def chat_body(content: str = "Hello") -> dict[str, Any]:
    return {"model": MODEL, "messages": [{"role": "user", "content": content}]}


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(8)}"
