"""Events, standing, plan changes, schedules and usage billing, built once per app and run in its lifespan.

``billing_engine(services, gateway, provider)`` builds the parts on first use and keeps them in
``services.extras`` (like the admin services); ``running()`` runs the periodic work:

- the standing scan (trial.py) every ``quota_check_seconds``, like the token quota's;
- every ``PERIOD_PASS_SECONDS``: usage billing of closed periods (usage_billing.py), then the
  provider's own clock where it has one (the sandbox renews due subscriptions), then the
  schedules' phase boundaries (schedules.py).

The gateway's hot path reads the gate from ``services.extras[STANDING_GATE]`` (one line in
``Gateway.entitle``), so the gateway needs no import of billing.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from agent_server.billing.events import EventPipeline, OrderHandler
from agent_server.billing.plan_changes import PlanChanges
from agent_server.billing.port import BillingProvider
from agent_server.billing.pricebook import PriceBooks
from agent_server.billing.schedules import Schedules
from agent_server.billing.trial import StandingGate
from agent_server.billing.usage_billing import UsageBilling
from agent_server.capabilities.services import Services
from agent_server.foundation.tasks import stop_tasks
from agent_server.gateway.service import Gateway

log = logging.getLogger("agentgate.billing")
ENGINE_KEY = "billing.engine"
STANDING_GATE = "billing.standing"  # read by Gateway.entitle on every /v1 request
PERIOD_PASS_SECONDS = 60.0


@dataclass
class BillingEngine:
    provider: BillingProvider
    gate: StandingGate
    events: EventPipeline
    changes: PlanChanges
    schedules: Schedules
    usage: UsageBilling
    standing_every: float

    async def period_pass(self) -> None:
        """One round of the time-driven work; each part's failure is logged and retried next round."""
        advance: Callable[[], Awaitable[Any]] | None = getattr(self.provider, "advance", None)
        steps: list[tuple[str, Callable[[], Awaitable[Any]]]] = [("usage billing", self.usage.run_once)]
        if advance is not None:
            steps.append(("provider renewals", advance))
        steps.append(("schedules", self.schedules.run_once))
        for name, step in steps:
            try:
                await step()
            except Exception:
                log.exception("billing: %s pass failed", name)

    async def _periodic(self) -> None:
        while True:
            await asyncio.sleep(PERIOD_PASS_SECONDS)
            await self.period_pass()

    @asynccontextmanager
    async def running(self) -> AsyncIterator[BillingEngine]:
        tasks = [
            asyncio.create_task(self.gate.run(self.standing_every), name="billing-standing"),
            asyncio.create_task(self._periodic(), name="billing-periods"),
        ]
        try:
            yield self
        finally:
            await stop_tasks(tasks)


def billing_engine(
    services: Services,
    gateway: Gateway,
    provider: BillingProvider,
    *,
    orders: OrderHandler | None = None,
) -> BillingEngine:
    existing = services.extras.get(ENGINE_KEY)
    if existing is not None:
        return existing
    settings, db, clock = services.settings, services.db, services.clock
    pack = services.knowledge.pack
    segment = settings.billing_path_segment
    status_url = f"{settings.public_base_url.rstrip('/')}/{segment}/status"
    negotiated = frozenset(plan.id for plan in pack.plans if plan.price_monthly is None)
    gate = StandingGate(db, clock, status_url, negotiated)
    books = PriceBooks(services.knowledge)
    events = EventPipeline(
        db,
        clock,
        provider,
        gate,
        services.events,
        grace_days=settings.billing_grace_days,
        plans=frozenset(plan.id for plan in pack.plans),
        quota=gateway.quota,
        orders=orders,
    )
    changes = PlanChanges(db, clock, provider, books.current, gate, gateway.quota, segment)
    # Model prices from the gateway's one model table (catalogue and declared upstream models).
    prices, currency = gateway.models.prices, gateway.models.currency
    engine = BillingEngine(
        provider=provider,
        gate=gate,
        events=events,
        changes=changes,
        schedules=Schedules(db, clock, changes, books.current),
        usage=UsageBilling(db, clock, provider, prices, currency),
        standing_every=settings.quota_check_seconds,
    )
    services.extras[ENGINE_KEY] = engine
    services.extras[STANDING_GATE] = gate
    return engine
