"""Fixed-fee checkout of the public site (``/api/checkout.php``): price an item of the catalogue, record
the order, open a checkout at the configured payment provider (the sandbox's confirmation page or the
real provider's). The provider's events make the order ``paid``, ``failed`` or ``expired``
(order_events.py); the payer comes back to the order's status page."""

from __future__ import annotations

import secrets
from datetime import timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, EmailStr, Field, StrictInt

from agent_server.billing.money import decimal_text, to_minor
from agent_server.billing.port import BillingProvider, Price
from agent_server.foundation.clock import Clock
from agent_server.foundation.errors import NotFound, ValidationFailed
from agent_server.foundation.timeutil import iso, utc
from agent_server.knowledge.search import Knowledge
from agent_server.site.catalogue import purchasable
from agent_server.site.tables import OrderRecord
from agent_server.storage.db import Database


class CheckoutBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    item_id: str = Field(min_length=1, max_length=100, description="A purchasable id of a catalogue.")
    quantity: StrictInt = Field(
        default=1, ge=1, le=50, description="Training seats; 1 for consulting packages (a JSON integer)."
    )
    email: EmailStr = Field(description="Where the confirmation goes.")
    name: str | None = Field(default=None, max_length=200, description="Buyer's name or company.")


def order_view(order: OrderRecord) -> dict[str, Any]:
    """The public JSON of an order; the e-mail address is not echoed back."""
    return {
        "order_id": order.id,
        "status": order.status,
        "provider": order.provider,
        "sandbox": order.provider == "sandbox",
        "item": {"kind": order.item_kind, "id": order.item_id, "name": order.item_name},
        "quantity": order.quantity,
        "currency": order.currency,
        "unit_amount": decimal_text(order.unit_amount_minor, order.currency),
        "amount": decimal_text(order.amount_minor, order.currency),
        "amount_minor": order.amount_minor,
        "checkout_url": order.checkout_url,
        "created_at": iso(order.created_at),
        "expires_at": iso(order.expires_at),
    }


class Checkout:
    def __init__(
        self, db: Database, clock: Clock, provider: BillingProvider, knowledge: Knowledge, base_url: str
    ) -> None:
        self.db, self.clock, self.provider, self.knowledge = db, clock, provider, knowledge
        self.base_url = base_url.rstrip("/")

    async def start(self, body: CheckoutBody) -> OrderRecord:
        items = purchasable(self.knowledge.pack)
        if body.item_id not in items:
            known = {e.id for e in (*self.knowledge.pack.consulting, *self.knowledge.pack.hardware)}
            if body.item_id in known:
                raise ValidationFailed(
                    f"'{body.item_id}' is quoted individually and cannot be bought online; book the free "
                    "discovery call (/api/discovery-call.json).",
                    code="not_purchasable",
                    param="item_id",
                )
            raise ValidationFailed(
                f"Unknown item '{body.item_id}'. Purchasable items: {', '.join(sorted(items))}.",
                code="unknown_item",
                param="item_id",
            )
        kind, name, price, currency = items[body.item_id]
        if kind == "consulting" and body.quantity != 1:
            raise ValidationFailed(
                "A consulting package is bought once per order; send quantity 1.", param="quantity"
            )
        unit = to_minor(price, currency)
        order_id = f"ord_{secrets.token_hex(12)}"
        back = f"{self.base_url}/api/checkout.php?order_id={order_id}"  # the order's status page
        line = Price(f"item:{body.item_id}", name, unit, currency, interval=None)
        session = await self.provider.one_off_checkout(
            None, str(body.email), [(line, body.quantity)], order_id, back, back
        )
        now = utc(self.clock.now())
        order = OrderRecord(
            id=order_id,
            item_kind=kind,
            item_id=body.item_id,
            item_name=name,
            quantity=body.quantity,
            unit_amount_minor=unit,
            amount_minor=unit * body.quantity,
            currency=currency,
            email=str(body.email),
            name=body.name,
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
        return order

    async def get(self, order_id: str) -> OrderRecord:
        async with self.db.session() as db:
            order = await db.get(OrderRecord, order_id)
        if order is None:
            raise NotFound(f"No order '{order_id}'.", param="order_id")
        return order
