"""``create-checkout`` and ``exchange-redirect``: a tenant subscribes to a plan at the provider.

``start`` links the tenant's customer, opens the provider's session (a hosted page, or on a
Stripe-compatible server a SetupIntent) and records a ``billing_checkouts`` row; ``exchange`` turns
the session the payer came back with into its result. The provider's events then apply the
subscription to the tenant (events.py); the exchange finishes what only the payer's return can
finish (the SetupIntent flow's subscription) and caches the card on file.
"""

from __future__ import annotations

import secrets
from typing import Any

from sqlalchemy import select, update

from agent_server.admin.audit import AuditLog
from agent_server.billing.customers import Customers, Who
from agent_server.billing.pricebook import PriceBooks
from agent_server.billing.purchases import order_result
from agent_server.billing.tables import BillingOrder, PlanCheckout
from agent_server.billing.trial import OVERDUE, PAID, first_charge_at, timestamp
from agent_server.billing.urls import ReturnUrls
from agent_server.foundation.clock import Clock
from agent_server.foundation.errors import Conflict, NotFound
from agent_server.foundation.timeutil import iso, utc
from agent_server.storage.db import Database


class PlanCheckouts:
    def __init__(
        self,
        db: Database,
        clock: Clock,
        customers: Customers,
        books: PriceBooks,
        urls: ReturnUrls,
        audit: AuditLog,
        segment: str,
    ) -> None:
        self.db, self.clock, self.customers, self.books = db, clock, customers, books
        self.urls, self.audit, self.segment = urls, audit, segment
        self.provider = customers.provider

    async def start(
        self, who: Who, plan_id: str, success_url: str | None, cancel_url: str | None
    ) -> dict[str, Any]:
        price = self.books.current().plan_price(plan_id)
        success = self.urls.checked(success_url, self.urls.success(), "success_url")
        cancel = self.urls.checked(cancel_url, self.urls.cancel(), "cancel_url")
        current = await self.customers.account(who.tenant_id)
        if current is not None and current.subscription_id and current.subscription_status in PAID | OVERDUE:
            raise Conflict(
                f"This tenant already has a {current.subscription_status} subscription; change its plan with "
                f"POST /{self.segment}/subscription.",
                code="subscription_exists",
            )
        account, _ = await self.customers.ensure(who)
        tenant = await self.customers.tenant(who.tenant_id)
        charged_at = first_charge_at(timestamp(tenant.trial_ends_at) or 0.0, self.clock.now())
        trial_end = int(charged_at) if charged_at is not None else None
        session = await self.provider.plan_checkout(
            account.customer_id, price, plan_id, success, cancel, trial_end
        )
        checkout = PlanCheckout(
            id=f"bco_{secrets.token_hex(12)}",
            tenant_id=who.tenant_id,
            plan_id=plan_id,
            provider_ref=session.ref,
            status="open",
            created_at=utc(self.clock.now()),
        )
        async with self.db.session() as db:
            db.add(checkout)
        details = {
            "plan_id": plan_id,
            "provider": self.provider.name,
            "amount_minor": price.amount_minor,
            "first_charge_at": iso(utc(trial_end)) if trial_end else None,
        }
        await self.audit.record(
            actor=who.user_id,
            tenant_id=who.tenant_id,
            action="billing.checkout.create",
            target=checkout.id,
            ip=who.ip,
            details={**details, "currency": price.currency},
        )
        return {
            "object": "checkout",
            "checkout_id": checkout.id,
            "session_ref": session.ref,
            "url": session.url,
            "expires_in": session.expires_in,
            "flow": session.flow,
            "client_secret": session.client_secret,
            "provider": self.provider.name,
            "plan_id": plan_id,
            "amount_minor": price.amount_minor,
            "currency": price.currency,
            "interval": price.interval,
            "first_charge_at": iso(utc(trial_end)) if trial_end else None,
        }

    async def _owned(self, who: Who, ref: str) -> PlanCheckout | BillingOrder:
        """The tenant's checkout or order of this provider session; another tenant's is 404 alike."""
        async with self.db.session() as db:
            for table in (PlanCheckout, BillingOrder):
                found = (await db.execute(select(table).where(table.provider_ref == ref))).scalars().first()
                if found is not None and found.tenant_id == who.tenant_id:
                    return found
        raise NotFound(f"No checkout '{ref}' for this tenant.", param="session_ref")

    async def exchange(self, who: Who, ref: str) -> dict[str, Any]:
        owned = await self._owned(who, ref)
        result = await self.provider.session_result(ref)
        answer: dict[str, Any] = {"object": "checkout_result", "session_ref": ref, "status": result["status"]}
        if isinstance(owned, BillingOrder):
            return {**answer, "kind": "order", **await order_result(self.db, self.clock, owned, result)}
        answer.update(kind="plan", checkout_id=owned.id, plan_id=owned.plan_id, subscription=None)
        if result["status"] in ("complete", "expired") and owned.status == "open":
            await self._close(who, owned, result["status"])
        if result["status"] == "complete" and result.get("subscription"):
            subscription = await self.provider.subscription(result["subscription"])
            answer["subscription"] = {
                "id": subscription.id,
                "status": subscription.status,
                "plan_id": subscription.plan_id or owned.plan_id,
                "current_period_end": iso(utc(subscription.current_period_end))
                if subscription.current_period_end
                else None,
                "cancel_at_period_end": subscription.cancel_at_period_end,
            }
            await self.customers.refresh_card(who.tenant_id)
        return answer

    async def _close(self, who: Who, checkout: PlanCheckout, status: str) -> None:
        """Open -> complete or expired, once even when two exchanges of the session race."""
        completed_at = utc(self.clock.now()) if status == "complete" else None
        async with self.db.session() as db:
            closed = await db.execute(
                update(PlanCheckout)
                .where(PlanCheckout.id == checkout.id, PlanCheckout.status == "open")  # type: ignore[arg-type]
                .values(status=status, completed_at=completed_at)
            )
        if not closed.rowcount:  # type: ignore[attr-defined]
            return
        await self.audit.record(
            actor=who.user_id,
            tenant_id=who.tenant_id,
            action=f"billing.checkout.{status}",
            target=checkout.id,
            ip=who.ip,
            details={"plan_id": checkout.plan_id, "session_ref": checkout.provider_ref},
        )
