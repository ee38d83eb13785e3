"""``POST /{segment}/subscription``: change the plan (prorated by default), cancel at period end, resume.

Each action calls the provider, then writes what the provider answered to the tenant's billing
account and plan at once (the provider's ``customer.subscription.updated`` event follows and
agrees), re-reads the tenant's standing and writes an audit entry. Cancel and resume are
idempotent: cancelling a subscription that already ends at its period's end answers it unchanged.
The direct write does not move ``subscription_event_at``: only the provider's events order each
other (our clock and the provider's are not comparable).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from agent_server.billing.audit import audit_entry
from agent_server.billing.port import BillingProvider, Subscription
from agent_server.billing.pricebook import PriceBook
from agent_server.billing.tables import BillingAccount
from agent_server.billing.trial import OVERDUE, PAID, StandingGate
from agent_server.foundation.clock import Clock
from agent_server.foundation.errors import Conflict, ValidationFailed
from agent_server.foundation.timeutil import iso, utc
from agent_server.gateway.quota import QuotaGate
from agent_server.gateway.tables import Tenant
from agent_server.storage.db import Database


def _iso(value: datetime | None) -> str | None:
    return iso(value) if value is not None else None


def subscription_view(account: BillingAccount) -> dict[str, Any]:
    return {
        "object": "subscription",
        "id": account.subscription_id,
        "status": account.subscription_status,
        "plan_id": account.plan_id,
        "current_period_start": _iso(account.current_period_start),
        "current_period_end": _iso(account.current_period_end),
        "cancel_at_period_end": account.cancel_at_period_end,
        "grace_until": _iso(account.grace_until),
    }


class PlanChanges:
    def __init__(
        self,
        db: Database,
        clock: Clock,
        provider: BillingProvider,
        prices: Callable[[], PriceBook],
        gate: StandingGate,
        quota: QuotaGate | None,
        segment: str,
    ) -> None:
        self.db, self.clock, self.provider, self.prices = db, clock, provider, prices
        self.gate, self.quota, self.segment = gate, quota, segment

    async def subscribed(self, tenant_id: str) -> BillingAccount:
        """The tenant's account with a subscription that has not ended; 409 otherwise."""
        async with self.db.session() as session:
            account = await session.get(BillingAccount, tenant_id)
        if account is None or account.subscription_id is None:
            raise Conflict(
                f"This tenant has no subscription yet; start one with POST /{self.segment}/create-checkout.",
                code="no_subscription",
            )
        if account.subscription_status not in PAID | OVERDUE:
            raise Conflict(
                f"The subscription is {account.subscription_status}; start a new one with "
                f"POST /{self.segment}/create-checkout.",
                code="subscription_not_active",
            )
        return account

    async def change(self, tenant_id: str, plan_id: str, prorate: bool, actor: str) -> dict[str, Any]:
        price = self.prices().plan_price(plan_id)  # 400 for an unknown or negotiated plan
        account = await self.subscribed(tenant_id)
        if account.plan_id == plan_id:
            raise ValidationFailed(
                f"The subscription is already on the {plan_id} plan.", code="plan_unchanged", param="plan_id"
            )
        sub = await self.provider.change_plan(account.subscription_id or "", price, plan_id, prorate)
        details = {"plan_before": account.plan_id, "plan_id": plan_id, "prorate": prorate}
        return await self._store(tenant_id, sub, actor, "billing.subscription.change", details, plan_id)

    async def cancel(self, tenant_id: str, actor: str) -> dict[str, Any]:
        account = await self.subscribed(tenant_id)
        if account.cancel_at_period_end:
            return subscription_view(account)
        sub = await self.provider.cancel(account.subscription_id or "", at_period_end=True)
        return await self._store(tenant_id, sub, actor, "billing.subscription.cancel", {}, None)

    async def resume(self, tenant_id: str, actor: str) -> dict[str, Any]:
        account = await self.subscribed(tenant_id)
        if not account.cancel_at_period_end:
            return subscription_view(account)
        sub = await self.provider.resume(account.subscription_id or "")
        return await self._store(tenant_id, sub, actor, "billing.subscription.resume", {}, None)

    async def apply_plan(self, tenant_id: str, plan_id: str, actor: str, action: str) -> dict[str, Any]:
        """A scheduled change at a phase boundary: not prorated (the new phase starts a new price)."""
        price = self.prices().plan_price(plan_id)
        account = await self.subscribed(tenant_id)
        if account.plan_id == plan_id:
            return subscription_view(account)
        sub = await self.provider.change_plan(account.subscription_id or "", price, plan_id, False)
        return await self._store(
            tenant_id, sub, actor, action, {"plan_before": account.plan_id, "plan_id": plan_id}, plan_id
        )

    async def _store(
        self,
        tenant_id: str,
        sub: Subscription,
        actor: str,
        action: str,
        details: dict[str, Any],
        plan_id: str | None,
    ) -> dict[str, Any]:
        now = utc(self.clock.now())
        plan_changed = False
        async with self.db.session() as session:
            account = await session.get(BillingAccount, tenant_id)
            assert account is not None  # checked by subscribed(); accounts are never deleted
            account.subscription_status = sub.status
            account.plan_id = sub.plan_id or plan_id or account.plan_id
            if sub.current_period_start:
                account.current_period_start = utc(sub.current_period_start)
            if sub.current_period_end:
                account.current_period_end = utc(sub.current_period_end)
            account.cancel_at_period_end, account.updated_at = sub.cancel_at_period_end, now
            tenant = await session.get(Tenant, tenant_id)
            if tenant is not None and account.plan_id and tenant.plan_id != account.plan_id and plan_id:
                tenant.plan_id, plan_changed = account.plan_id, True
                tenant.contract_ends_at = None  # a subscription pays a self-serve plan: no contract
            session.add(
                audit_entry(
                    tenant_id,
                    action,
                    now,
                    actor=actor,
                    target=sub.id,
                    details={
                        **details,
                        "status": sub.status,
                        "cancel_at_period_end": sub.cancel_at_period_end,
                    },
                )
            )
            view = subscription_view(account)
        await self.gate.refresh(tenant_id)
        if plan_changed and self.quota is not None:
            await self.quota.scan()
        return view
