"""The provider's events, verified and applied exactly once: ``POST /{segment}/webhooks`` calls ``receive``.

1. ``provider.parse_event`` checks the signature and its tolerance window (a bad signature or an
   old timestamp is 400 and nothing changes).
2. One transaction inserts the event's id into ``billing_events`` first, then applies its handler
   (handlers.py) and writes the audit entries; a replayed id finds its row and changes nothing
   ("already applied"), and two concurrent deliveries of one id cannot both commit.
3. After the commit: the tenant's webhook ``invoice.created`` (through the event bus, like
   ``key.rotated``), the tenant's standing re-read at once (trial.py), the token quota re-scanned
   after a plan change.

Unknown event types are recorded as ``ignored``; events for no known tenant as ``unmatched``; both
answer 200 so the provider stops retrying them. A crash after the commit but before the webhook is
queued loses that one tenant webhook (the provider does not resend an acknowledged event).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from agent_server.billing.audit import audit_entry
from agent_server.billing.handlers import HANDLERS, Applied, EventContext
from agent_server.billing.port import BillingProvider
from agent_server.billing.tables import BillingEvent
from agent_server.billing.trial import Standing, StandingGate, assess, timestamp
from agent_server.foundation.clock import Clock
from agent_server.foundation.errors import AgentError, ValidationFailed
from agent_server.foundation.events import EventBus
from agent_server.foundation.timeutil import utc
from agent_server.gateway.quota import QuotaGate
from agent_server.gateway.tables import Tenant
from agent_server.storage.db import Database
from agent_server.webhooks.dispatcher import InvoiceCreated

log = logging.getLogger("agentgate.billing")
OrderHandler = Callable[[AsyncSession, dict[str, Any]], Awaitable[str]]


class _AlreadyApplied(Exception):
    pass


def _checked(event: Any) -> dict[str, Any]:
    """The fields every event must carry, whatever its type."""
    ok = (
        isinstance(event, dict)
        and isinstance(event.get("id"), str)
        and 0 < len(event["id"]) <= 100
        and isinstance(event.get("type"), str)
        and isinstance(event.get("created"), int)
        and isinstance(event.get("data"), dict)
        and isinstance(event["data"].get("object"), dict)
    )
    if not ok:
        raise ValidationFailed("The event lacks id, type, created or data.object.", code="invalid_event")
    return event


class EventPipeline:
    def __init__(
        self,
        db: Database,
        clock: Clock,
        provider: BillingProvider,
        gate: StandingGate,
        bus: EventBus,
        *,
        grace_days: int,
        plans: frozenset[str],
        quota: QuotaGate | None = None,
        orders: OrderHandler | None = None,
    ) -> None:
        self.db, self.clock, self.provider, self.gate, self.bus = db, clock, provider, gate, bus
        self.grace, self.plans, self.quota, self.orders = timedelta(days=grace_days), plans, quota, orders

    async def receive(self, payload: bytes, signature: str | None) -> dict[str, Any]:
        """Verify and apply a delivery; the answer names the event and what became of it."""
        try:
            event = self.provider.parse_event(payload, signature, int(self.clock.now()))
        except ValidationFailed:  # bad signature, old timestamp, not an event: 400, nothing changes
            raise
        except AgentError as err:  # an adapter's 401 is the same story: the sender's problem, a 400
            raise ValidationFailed(err.message, code="invalid_signature", param="Stripe-Signature") from None
        return await self.apply(_checked(event))

    async def apply(self, event: dict[str, Any]) -> dict[str, Any]:
        answer = {"received": True, "id": event["id"], "type": event["type"]}
        now = utc(self.clock.now())
        try:
            async with self.db.session() as session:
                applied = await self._apply_in(session, event, now)
        except _AlreadyApplied:
            return {**answer, "outcome": "already_applied"}
        except IntegrityError:
            # A concurrent delivery of the same id committed first (its row won the primary key).
            async with self.db.session() as session:
                if await session.get(BillingEvent, event["id"]) is None:
                    raise
            return {**answer, "outcome": "already_applied"}
        await self._after(applied)
        return {**answer, "outcome": applied.outcome}

    async def _apply_in(self, session: AsyncSession, event: dict[str, Any], now: datetime) -> Applied:
        if await session.get(BillingEvent, event["id"]) is not None:
            raise _AlreadyApplied
        row = BillingEvent(
            id=event["id"],
            type=event["type"][:100],
            provider_created=event["created"],
            received_at=now,
            outcome="applied",
        )
        session.add(row)
        await session.flush()  # the id is taken before any effect
        handler = HANDLERS.get(event["type"])
        ctx = EventContext(session, event, now, self.provider.name, self.grace, self.plans, self.orders)
        applied = await handler(ctx) if handler is not None else Applied("ignored")
        row.outcome, row.tenant_id = applied.outcome[:40], applied.tenant_id
        target = event["data"]["object"].get("id")
        session.add(
            audit_entry(
                applied.tenant_id,
                f"billing.event.{event['type']}",
                now,
                actor=f"provider:{self.provider.name}",
                target=target if isinstance(target, str) else None,
                details={"event_id": event["id"], "outcome": applied.outcome, **applied.details},
                outcome="ok" if applied.outcome == "applied" else "ignored",
            )
        )
        if applied.tenant_id is not None and ctx.account is not None and applied.outcome == "applied":
            await self._audit_transition(session, ctx, applied.tenant_id, now)
        return applied

    async def _audit_transition(
        self, session: AsyncSession, ctx: EventContext, tenant_id: str, now: datetime
    ) -> None:
        """Access restored, or a grace period started, by this event: one audit entry each."""
        tenant = await session.get(Tenant, tenant_id)
        if tenant is None or ctx.before is None or ctx.account is None:
            return
        moment = now.timestamp()
        negotiated = tenant.plan_id in self.gate.negotiated_plans
        trial_end = timestamp(tenant.trial_ends_at) or 0.0

        def standing(status: str | None, grace: datetime | None, ended: int | None) -> Standing:
            return assess(
                moment,
                trial_ends_at=trial_end,
                status=status,
                grace_until=timestamp(grace),
                ended_at=float(ended) if ended is not None else None,
                negotiated=negotiated,
                contract_ends_at=timestamp(tenant.contract_ends_at),
            )

        account = ctx.account
        before = standing(*ctx.before)
        after = standing(account.subscription_status, account.grace_until, account.subscription_event_at)
        action = None
        if before.refused(moment) and not after.refused(moment):
            action = "billing.access_restored"
        elif after.state == "grace" and before.state != "grace":
            action = "billing.grace_started"
        if action is not None:
            details = {"from": before.state, "to": after.state, "event_id": ctx.event["id"]}
            if after.grace_until is not None:
                details["grace_until"] = utc(after.grace_until).isoformat()
            session.add(audit_entry(tenant_id, action, now, details=details))

    async def _after(self, applied: Applied) -> None:
        """Effects outside the transaction; a failure here is logged, the event stays applied."""
        tenant_id = applied.tenant_id
        if tenant_id is None:
            return
        invoice = applied.invoice_created
        if invoice is not None:
            await self.bus.publish(
                InvoiceCreated(
                    tenant_id=tenant_id,
                    occurred_at=self.clock.now(),
                    invoice_id=invoice.id,
                    amount_cents=invoice.amount_due_minor,
                    currency=invoice.currency,
                )
            )
        try:
            await self.gate.refresh(tenant_id)
            if applied.plan_changed and self.quota is not None:
                await self.quota.scan()  # a new plan's quota applies now, not at the next scan
        except Exception:
            log.exception("billing: re-reading tenant %s after an event failed", tenant_id)
