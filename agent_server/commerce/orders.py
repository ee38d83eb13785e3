"""Orders made by completed checkout sessions: written with the session's move to ``completed`` in
one transaction (the order is unique per session), read back as ACP ``Order``s, and moved on by the
platform administrator (fulfilled, canceled)."""

from __future__ import annotations

import secrets
from typing import Any

from sqlalchemy import update
from sqlmodel import col, select

from agent_server.commerce.offer import Offer
from agent_server.commerce.payment_types import DelegatedPayments
from agent_server.commerce.tables import CheckoutSessionRecord, CommerceOrderRecord
from agent_server.commerce.view import order_line, order_view
from agent_server.commerce.webhooks import OrderWebhooks
from agent_server.foundation.clock import Clock
from agent_server.foundation.errors import Conflict, NotFound
from agent_server.foundation.timeutil import utc
from agent_server.storage.db import Database

ORDERS_PATH = "/agentic_commerce/orders"
# What an administrator may do to an order, and from which states.
MOVES = {"completed": ("confirmed",), "canceled": ("confirmed",)}


class Orders:
    def __init__(
        self, db: Database, clock: Clock, base_url: str, webhooks: OrderWebhooks, payments: DelegatedPayments
    ) -> None:
        self.db, self.clock, self.base_url, self.webhooks = db, clock, base_url.rstrip("/"), webhooks
        self.payments = payments

    def permalink(self, order_id: str) -> str:
        return f"{self.base_url}{ORDERS_PATH}/{order_id}"

    async def create(
        self,
        record: CheckoutSessionRecord,
        email: str,
        lines: list[dict[str, Any]],
        provider: str,
        payment_ref: str,
    ) -> CommerceOrderRecord:
        now = utc(self.clock.now())
        order = CommerceOrderRecord(
            id=f"acpord_{secrets.token_hex(12)}",
            checkout_session_id=record.id,
            platform_id=record.platform_id,
            status="confirmed",
            currency=record.currency,
            amount_minor=Offer.amount(lines),  # tax included: what was charged
            payment_provider=provider,
            payment_ref=payment_ref,
            email=email,
            lines=[order_line(line) for line in lines],
            created_at=now,
            updated_at=now,
        )
        async with self.db.session() as session:
            session.add(order)
            await session.execute(
                update(CheckoutSessionRecord)
                .where(col(CheckoutSessionRecord.id) == record.id)
                .values(status="completed", order_id=order.id, updated_at=now)
            )
            queued = await self.webhooks.queue(session, order.platform_id, "order_create", self._view(order))
        if queued:
            self.webhooks.wake()
        record.status, record.order_id, record.updated_at = "completed", order.id, now
        return order

    async def get(self, order_id: str) -> CommerceOrderRecord:
        async with self.db.session() as session:
            order = await session.get(CommerceOrderRecord, order_id)
        if order is None:
            raise NotFound(f"No order '{order_id}'.", code="order_not_found", param="order_id")
        return order

    def _view(self, order: CommerceOrderRecord) -> dict[str, Any]:
        return order_view(order, self.permalink(order.id))

    async def view_of(self, order_id: str) -> dict[str, Any]:
        return self._view(await self.get(order_id))

    async def recent(self, limit: int) -> list[CommerceOrderRecord]:
        async with self.db.session() as session:
            rows = await session.execute(
                select(CommerceOrderRecord).order_by(col(CommerceOrderRecord.created_at).desc()).limit(limit)
            )
            return list(rows.scalars())

    async def refund(self, order_id: str) -> CommerceOrderRecord:
        """Give the whole amount back at the provider (once: the refund is keyed by the order); the
        order keeps its status and shows the refund as an adjustment."""
        order = await self.get(order_id)
        if order.refund_ref is not None:
            raise Conflict("This order is refunded already.", code="order_refunded")
        if order.payment_provider != self.payments.provider:
            raise Conflict(
                f"This order was paid through '{order.payment_provider}', not the configured provider.",
                code="order_provider",
            )
        refund_ref = await self.payments.refund(
            order.payment_ref, order.amount_minor, order.currency, order.id
        )
        return await self._update(order_id, refunded_minor=order.amount_minor, refund_ref=refund_ref)

    async def _update(self, order_id: str, **changes: Any) -> CommerceOrderRecord:
        """Change the order and queue its ``order_update`` in one transaction."""
        now = utc(self.clock.now())
        async with self.db.session() as session:
            stored = await session.get(CommerceOrderRecord, order_id)
            assert stored is not None
            for name, value in changes.items():
                setattr(stored, name, value)
            if "refund_ref" in changes:
                stored.refunded_at = now
            stored.updated_at = now
            session.add(stored)
            queued = await self.webhooks.queue(
                session, stored.platform_id, "order_update", self._view(stored)
            )
        if queued:
            self.webhooks.wake()
        return stored

    async def move(self, order_id: str, status: str) -> CommerceOrderRecord:
        """``completed`` (fulfilled) or ``canceled``, from ``confirmed`` only."""
        order = await self.get(order_id)
        if order.status not in MOVES[status]:
            raise Conflict(f"This order is {order.status}; it cannot become {status}.", code="order_state")
        return await self._update(order_id, status=status)
