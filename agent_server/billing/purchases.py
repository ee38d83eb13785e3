"""One-off purchases of a tenant (consulting, training seats, workspace seats, hardware), paid at the
provider: ``consulting-checkout``, ``workspace-checkout``, ``hardware-checkout`` and ``checkout``.

The order is recorded ``pending`` with its price from the content pack (integer minor units) before
the payer sees the provider's page; the provider's events make it ``paid``, ``failed`` or ``expired``
(order_events.py). The session's reference is the order id.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from agent_server.admin.audit import AuditLog
from agent_server.billing import orders
from agent_server.billing.customers import Customers, Who
from agent_server.billing.pricebook import Item, PriceBooks
from agent_server.billing.tables import BillingOrder
from agent_server.billing.urls import ReturnUrls
from agent_server.foundation.clock import Clock
from agent_server.foundation.errors import ValidationFailed
from agent_server.foundation.timeutil import utc
from agent_server.storage.db import Database


async def order_result(
    db: Database, clock: Clock, order: BillingOrder, result: dict[str, Any]
) -> dict[str, Any]:
    """What ``exchange-redirect`` says about an order: a completed, paid session marks it paid now
    (the provider answered us directly; its event, arriving later, then changes nothing)."""
    if result["status"] == "complete" and result.get("payment_status") == "paid":
        async with db.session() as session:
            await orders.mark(session, order.id, "paid", utc(clock.now()), source="exchange-redirect")
    elif result["status"] == "expired":
        async with db.session() as session:
            await orders.mark(session, order.id, "expired", utc(clock.now()), source="exchange-redirect")
    async with db.session() as session:
        current = await session.get(BillingOrder, order.id)
    return {"order": orders.order_view(current or order)}


class Purchases:
    def __init__(
        self,
        db: Database,
        clock: Clock,
        customers: Customers,
        books: PriceBooks,
        urls: ReturnUrls,
        audit: AuditLog,
    ) -> None:
        self.db, self.clock, self.customers, self.books = db, clock, customers, books
        self.urls, self.audit, self.provider = urls, audit, customers.provider

    def item(self, item_id: str, tenant_plan: str, kinds: tuple[str, ...], param: str = "item_id") -> Item:
        return self.books.current().item(item_id, tenant_plan, kinds, param)

    async def start(
        self,
        who: Who,
        item: Item,
        quantity: int,
        details: dict[str, Any],
        success_url: str | None,
        cancel_url: str | None,
    ) -> dict[str, Any]:
        if not 1 <= quantity <= item.max_quantity:
            unit = "seats" if item.kind in ("training", "workspace") else "units"
            raise ValidationFailed(
                f"'{item.name}' is bought 1 to {item.max_quantity} {unit} at a time.", param="quantity"
            )
        success = self.urls.checked(success_url, self.urls.success(), "success_url")
        cancel = self.urls.checked(cancel_url, self.urls.cancel(), "cancel_url")
        account, _ = await self.customers.ensure(who)
        order_id = orders.new_order_id()
        session = await self.provider.one_off_checkout(
            account.customer_id, "", [(item.price(), quantity)], order_id, success, cancel
        )
        now = utc(self.clock.now())
        order = BillingOrder(
            id=order_id,
            tenant_id=who.tenant_id,
            item_kind=item.kind,
            item_id=item.id,
            item_name=item.name,
            quantity=quantity,
            unit_amount_minor=item.unit_minor,
            amount_minor=item.unit_minor * quantity,
            currency=item.currency,
            details=details,
            status="pending",
            provider=self.provider.name,
            provider_ref=session.ref,
            checkout_url=session.url,
            created_at=now,
            updated_at=now,
            expires_at=now + timedelta(seconds=session.expires_in),
        )
        async with self.db.session() as db:
            db.add(order)
        await self.audit.record(
            actor=who.user_id,
            tenant_id=who.tenant_id,
            action="billing.order.create",
            target=order_id,
            ip=who.ip,
            details={"item_id": item.id, "quantity": quantity, "amount_minor": order.amount_minor},
        )
        view = orders.order_view(order)
        view["checkout"] = {
            "session_ref": session.ref,
            "url": session.url,
            "expires_in": session.expires_in,
            "flow": session.flow,
            "client_secret": session.client_secret,
        }
        return view
