"""``status`` and ``invoices``: what a tenant's admin reads about its billing, from our own tables.

The standing (trial, active, grace, refused) is the one the gateway enforces (trial.py); the invoices
are the rows the provider's events wrote, newest first, paginated with ``starting_after``. What the
tenant is charged next, and when: ``next_charge`` for a live subscription (its first charge, at the
trial's end, while it is ``trialing``), ``first_charge_at`` for one started now.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import and_, or_, select

from agent_server.billing.customers import Customers
from agent_server.billing.money import decimal_text
from agent_server.billing.pricebook import PriceBook, PriceBooks
from agent_server.billing.tables import BillingAccount, Invoice
from agent_server.billing.trial import OVERDUE, PAID, assess, first_charge_at, standing_view, timestamp
from agent_server.foundation.errors import NotFound
from agent_server.foundation.timeutil import iso, utc
from agent_server.storage.db import Database


def _iso(value: datetime | None) -> str | None:
    return iso(value) if value is not None else None


PRICES_INCLUDE_VAT = False  # the content pack's prices are net of VAT (resources/content/README.md)


def next_charge(account: BillingAccount | None, book: PriceBook) -> dict[str, Any] | None:
    """The live subscription's next charge: at its period's end, the price of the plan it pays for;
    None without one, or when it ends at its period's end."""
    if account is None or account.subscription_status not in PAID | OVERDUE or account.cancel_at_period_end:
        return None
    price = book.plans.get(account.plan_id or "")
    if price is None or account.current_period_end is None:
        return None
    return {
        "at": iso(account.current_period_end),
        "amount_minor": price.amount_minor,
        "currency": price.currency,
        "first": account.subscription_status == "trialing",  # the trial ends then
    }


def invoice_view(invoice: Invoice) -> dict[str, Any]:
    return {
        "object": "invoice",
        "id": invoice.id,
        "status": invoice.status,
        "currency": invoice.currency,
        "amount_due_minor": invoice.amount_due_minor,
        "amount_paid_minor": invoice.amount_paid_minor,
        "amount_due": decimal_text(invoice.amount_due_minor, invoice.currency),
        "period_start": _iso(invoice.period_start),
        "period_end": _iso(invoice.period_end),
        "hosted_url": invoice.hosted_url,
        "created_at": iso(invoice.created_at),
    }


class BillingStatus:
    def __init__(self, db: Database, customers: Customers, books: PriceBooks, status_url: str) -> None:
        self.db, self.customers, self.books, self.status_url = db, customers, books, status_url

    async def status(self, tenant_id: str) -> dict[str, Any]:
        tenant = await self.customers.tenant(tenant_id)
        account = await self.customers.account(tenant_id)
        book = self.books.current()
        now = self.customers.clock.now()
        standing = assess(
            now,
            trial_ends_at=timestamp(tenant.trial_ends_at) or 0.0,
            status=account.subscription_status if account else None,
            grace_until=timestamp(account.grace_until) if account else None,
            ended_at=float(account.subscription_event_at)
            if account and account.subscription_event_at
            else None,
            negotiated=tenant.plan_id not in book.plans,
            contract_ends_at=timestamp(tenant.contract_ends_at),
        )
        price = book.plans.get(tenant.plan_id)
        live = account is not None and account.subscription_status in PAID | OVERDUE
        first = None if live else first_charge_at(timestamp(tenant.trial_ends_at) or 0.0, now)
        subscription = None
        if account is not None and account.subscription_id:
            subscription = {
                "id": account.subscription_id,
                "status": account.subscription_status,
                "plan_id": account.plan_id,
                "current_period_start": _iso(account.current_period_start),
                "current_period_end": _iso(account.current_period_end),
                "cancel_at_period_end": account.cancel_at_period_end,
            }
        return {
            "object": "billing_status",
            "tenant_id": tenant.id,
            "provider": self.customers.provider.name,
            "plan": {
                "id": tenant.plan_id,
                "name": book.plan_names.get(tenant.plan_id, tenant.plan_id),
                "price": {
                    "amount_minor": price.amount_minor,
                    "currency": price.currency,
                    "interval": price.interval,
                }
                if price
                else None,
            },
            "trial_ends_at": iso(tenant.trial_ends_at),
            "standing": standing_view(standing, now, self.status_url),
            "next_charge": next_charge(account, book),
            "first_charge_at": iso(utc(first)) if first is not None else None,
            "prices_include_vat": PRICES_INCLUDE_VAT,
            "subscription": subscription,
            "cancel_at_period_end": bool(account and account.cancel_at_period_end),
            "grace_until": _iso(account.grace_until) if account else None,
            "customer_id": account.customer_id if account else None,
            "payment_method": await self.customers.card(account),
        }

    async def invoices(self, tenant_id: str, limit: int, starting_after: str | None) -> dict[str, Any]:
        query = select(Invoice).where(Invoice.tenant_id == tenant_id)
        async with self.db.session() as session:
            if starting_after is not None:
                cursor = await session.get(Invoice, starting_after)
                if cursor is None or cursor.tenant_id != tenant_id:
                    raise NotFound(f"No invoice '{starting_after}' for this tenant.", param="starting_after")
                query = query.where(
                    or_(
                        Invoice.created_at < cursor.created_at,  # type: ignore[arg-type]
                        and_(Invoice.created_at == cursor.created_at, Invoice.id < cursor.id),  # type: ignore[arg-type]
                    )
                )
            ordered = query.order_by(Invoice.created_at.desc(), Invoice.id.desc()).limit(limit + 1)  # type: ignore[attr-defined]
            rows = list((await session.execute(ordered)).scalars())
        page = rows[:limit]
        return {
            "object": "list",
            "data": [invoice_view(invoice) for invoice in page],
            "has_more": len(rows) > limit,
            "next_starting_after": page[-1].id if len(rows) > limit else None,
        }
