"""What each provider event does to our state, inside the transaction that records the event.

A handler reads the event's object, finds the tenant (the customer id on our billing account, else
the ``tenant_id`` our own calls put in the metadata) and changes rows through the session it is
given; effects outside the database (the tenant's webhook, re-reading the gate) are returned in
``Applied`` and run by the pipeline after the commit (events.py).

Order tolerance: a subscription event older than the newest one applied to the account
(``subscription_event_at``) is recorded as ``stale`` and changes nothing; an invoice's status only
moves forward (a late ``invoice.created`` never turns a paid invoice back into open).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from agent_server.billing import provider_objects as po
from agent_server.billing.tables import BillingAccount, Invoice, PlanCheckout
from agent_server.billing.trial import OVERDUE, PAID
from agent_server.billing.usage_billing import note_closed_period
from agent_server.foundation.timeutil import utc
from agent_server.gateway.tables import Tenant

# Statuses only move up this ladder; paid and void are final.
INVOICE_RANK = {"draft": 0, "open": 1, "uncollectible": 2, "paid": 3, "void": 3}
LIVE = PAID | OVERDUE


@dataclass
class EventContext:
    session: AsyncSession
    event: dict[str, Any]
    now: datetime
    provider: str
    grace: timedelta
    plans: frozenset[str]  # plan ids the gateway knows
    # One-off orders of the public site (B1's order handler): (session, event object) -> outcome.
    orders: Callable[[AsyncSession, dict[str, Any]], Awaitable[str]] | None = None
    account: BillingAccount | None = None
    before: tuple[str | None, datetime | None, int | None] | None = None  # status, grace, event time

    @property
    def obj(self) -> dict[str, Any]:
        return self.event["data"]["object"]

    @property
    def created(self) -> int:
        return int(self.event["created"])


@dataclass
class Applied:
    outcome: str  # applied, stale, ignored, unmatched
    tenant_id: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    invoice_created: Invoice | None = None
    plan_changed: bool = False


async def find_account(
    ctx: EventContext, customer_id: str | None, meta: dict[str, Any]
) -> BillingAccount | None:
    """The tenant's billing account by customer id, else by our ``tenant_id`` metadata (made if missing)."""
    session, account = ctx.session, None
    if customer_id:
        found = await session.execute(select(BillingAccount).where(BillingAccount.customer_id == customer_id))
        account = found.scalars().first()
    tenant_id = meta.get("tenant_id")
    if account is None and isinstance(tenant_id, str) and await session.get(Tenant, tenant_id) is not None:
        account = await session.get(BillingAccount, tenant_id)
        if account is None:
            account = BillingAccount(tenant_id=tenant_id, provider=ctx.provider, updated_at=ctx.now)
            session.add(account)
        if customer_id and account.customer_id is None:
            account.customer_id = customer_id
    if account is not None:
        ctx.account = account
        ctx.before = (account.subscription_status, account.grace_until, account.subscription_event_at)
    return account


async def _set_plan(ctx: EventContext, tenant_id: str, plan_id: str | None) -> bool:
    """The tenant's plan follows what it pays for; the key cache sees it within its TTL."""
    if plan_id is None or plan_id not in ctx.plans:
        return False
    tenant = await ctx.session.get(Tenant, tenant_id)
    if tenant is None or tenant.plan_id == plan_id:
        return False
    tenant.plan_id = plan_id
    tenant.contract_ends_at = None  # a subscription pays a self-serve plan: no contract of ours
    return True


def _stale(account: BillingAccount, sub_id: str, status: str, created: int) -> str | None:
    newest = account.subscription_event_at
    if account.subscription_id not in (None, sub_id):
        # Another subscription is current: only a newer, live one replaces it.
        if status not in LIVE or (newest is not None and created < newest):
            return "superseded"
        return None
    if newest is not None and created < newest:
        return "stale"
    if account.subscription_status == "canceled" and status != "canceled" and created == newest:
        return "stale"  # same second as the cancellation: the end wins
    return None


async def subscription_changed(ctx: EventContext) -> Applied:
    sub = po.subscription_of(ctx.obj)
    account = await find_account(ctx, sub.customer_id, po.metadata(ctx.obj))
    if account is None or not sub.id:
        return Applied("unmatched")
    status = "canceled" if ctx.event["type"] == "customer.subscription.deleted" else sub.status
    skip = _stale(account, sub.id, status, ctx.created)
    if skip is not None:
        return Applied("stale", account.tenant_id, {"reason": skip, "subscription": sub.id})
    old_start, old_end = account.current_period_start, account.current_period_end
    new_start = utc(sub.current_period_start) if sub.current_period_start else None
    if account.subscription_id == sub.id and old_start and old_end and new_start and new_start >= old_end:
        # The provider renewed before our period pass saw the end: bill the closed period later.
        await note_closed_period(ctx.session, account.tenant_id, old_start, old_end, ctx.now)
    account.subscription_id, account.subscription_status = sub.id, status
    account.plan_id = sub.plan_id or account.plan_id
    account.current_period_start = new_start or account.current_period_start
    if sub.current_period_end:
        account.current_period_end = utc(sub.current_period_end)
    account.cancel_at_period_end = sub.cancel_at_period_end
    account.subscription_event_at = ctx.created
    _follow_status(ctx, account)
    account.updated_at = ctx.now
    changed = status in LIVE and await _set_plan(ctx, account.tenant_id, sub.plan_id)
    details = {"subscription": sub.id, "status": status, "plan_id": sub.plan_id}
    return Applied("applied", account.tenant_id, details, plan_changed=changed)


def _follow_status(ctx: EventContext, account: BillingAccount) -> None:
    """Paying ends a grace period; becoming overdue starts one (once, not extended by retries)."""
    if account.subscription_status in PAID:
        account.grace_until = None
    elif account.subscription_status in OVERDUE and account.grace_until is None:
        account.grace_until = ctx.now + ctx.grace


async def checkout_completed(ctx: EventContext) -> Applied:
    obj, meta = ctx.obj, po.metadata(ctx.obj)
    if obj.get("mode") != "subscription":
        return await order_event(ctx)
    ref = po.object_id(obj.get("id"))
    found = await ctx.session.execute(select(PlanCheckout).where(PlanCheckout.provider_ref == ref))
    checkout = found.scalars().first()
    if checkout is not None:
        meta = {"tenant_id": checkout.tenant_id, "plan_id": checkout.plan_id, **meta}
        checkout.status, checkout.completed_at = "complete", ctx.now
    account = await find_account(ctx, po.object_id(obj.get("customer")), meta)
    if account is None:
        return Applied("unmatched")
    sub_id = po.object_id(obj.get("subscription"))
    plan_id = meta.get("plan_id") if isinstance(meta.get("plan_id"), str) else None
    if sub_id and (account.subscription_id != sub_id or account.subscription_event_at is None):
        # The subscription's own events are authoritative once they arrive; until then, paid.
        account.subscription_id, account.subscription_status = sub_id, "active"
        account.plan_id = plan_id or account.plan_id
        _follow_status(ctx, account)
    account.updated_at = ctx.now
    changed = await _set_plan(ctx, account.tenant_id, plan_id)
    details = {"subscription": sub_id, "plan_id": plan_id, "checkout": checkout.id if checkout else None}
    return Applied("applied", account.tenant_id, details, plan_changed=changed)


async def invoice_changed(ctx: EventContext) -> Applied:
    obj, kind = ctx.obj, ctx.event["type"]
    account = await find_account(ctx, po.object_id(obj.get("customer")), po.metadata(obj))
    invoice_id = po.object_id(obj.get("id"))
    if account is None or not invoice_id:
        return Applied("unmatched")
    fields = po.invoice_fields(obj)
    if kind in ("invoice.paid", "invoice.payment_succeeded"):
        fields["status"] = "paid"
    row = await _upsert_invoice(ctx, account.tenant_id, invoice_id, fields)
    details: dict[str, Any] = {
        "invoice": invoice_id,
        "status": row.status,
        "amount_due_minor": row.amount_due_minor,
    }
    billed = po.subscription_of_invoice(obj)
    ours = billed is not None and billed == account.subscription_id  # one-off invoices do not count
    if row.status == "paid" and ours:
        account.grace_until = None
        if account.subscription_status in OVERDUE:
            account.subscription_status = "active"
    if kind == "invoice.payment_failed" and ours and account.subscription_status in LIVE:
        account.subscription_status = "past_due"  # a renewal failed; the provider's update follows
        _follow_status(ctx, account)
        details["grace_until"] = account.grace_until.isoformat() if account.grace_until else None
    account.updated_at = ctx.now
    created = row if kind == "invoice.created" else None  # once: the event's id is applied once
    return Applied("applied", account.tenant_id, details, invoice_created=created)


async def _upsert_invoice(
    ctx: EventContext, tenant_id: str, invoice_id: str, fields: dict[str, Any]
) -> Invoice:
    row = await ctx.session.get(Invoice, invoice_id)
    if row is None:
        created = fields["created"]
        row = Invoice(
            id=invoice_id,
            tenant_id=tenant_id,
            status=fields["status"],
            amount_due_minor=fields["amount_due_minor"],
            currency=fields["currency"],
            created_at=utc(created) if created else ctx.now,
            updated_at=ctx.now,
        )
        ctx.session.add(row)
    elif INVOICE_RANK.get(fields["status"], 0) < INVOICE_RANK.get(row.status, 0) or row.status in (
        "paid",
        "void",
    ):
        fields = {**fields, "status": row.status}  # never backwards (paid -> open)
    row.status = fields["status"]
    row.amount_due_minor = fields["amount_due_minor"]
    row.amount_paid_minor = max(row.amount_paid_minor or 0, fields["amount_paid_minor"])
    row.period_start = utc(fields["period_start"]) if fields["period_start"] else row.period_start
    row.period_end = utc(fields["period_end"]) if fields["period_end"] else row.period_end
    row.hosted_url = fields["hosted_url"] or row.hosted_url
    row.updated_at = ctx.now
    return row


async def payment_method_changed(ctx: EventContext) -> Applied:
    obj = ctx.obj
    account = await find_account(ctx, po.object_id(obj.get("customer")), po.metadata(obj))
    card = po.card_of(obj)
    if account is None or card is None:
        return Applied("unmatched")
    account.payment_method, account.updated_at = card, ctx.now
    return Applied("applied", account.tenant_id, {"brand": card["brand"], "last4": card["last4"]})


async def order_event(ctx: EventContext) -> Applied:
    """A one-off payment's outcome (paid, declined, expired): B1's order handler (order_events.py)."""
    if ctx.orders is None:
        return Applied("ignored", details={"reason": "no order handler"})
    meta = po.metadata(ctx.obj)
    reference = ctx.obj.get("client_reference_id") or meta.get("reference")
    tenant_id = meta.get("tenant_id") if isinstance(meta.get("tenant_id"), str) else None  # for its audit
    return Applied(await ctx.orders(ctx.session, ctx.obj), tenant_id, {"reference": reference})


HANDLERS: dict[str, Callable[[EventContext], Awaitable[Applied]]] = {
    "checkout.session.completed": checkout_completed,
    "checkout.session.expired": order_event,
    "checkout.session.async_payment_succeeded": order_event,
    "payment_intent.succeeded": order_event,
    "payment_intent.payment_failed": order_event,
    "customer.subscription.created": subscription_changed,
    "customer.subscription.updated": subscription_changed,
    "customer.subscription.deleted": subscription_changed,
    "invoice.created": invoice_changed,
    "invoice.finalized": invoice_changed,
    "invoice.updated": invoice_changed,
    "invoice.paid": invoice_changed,
    "invoice.payment_succeeded": invoice_changed,
    "invoice.payment_failed": invoice_changed,
    "invoice.voided": invoice_changed,
    "invoice.marked_uncollectible": invoice_changed,
    "payment_method.attached": payment_method_changed,
    "payment_method.updated": payment_method_changed,
    "payment_method.automatically_updated": payment_method_changed,
}
