"""One-off orders and their states: ``billing_orders`` (a tenant's purchases) and ``orders`` (the public
site's anonymous ``/api/checkout.php``), both moved only by ``mark``.

States: ``pending`` until the provider says more; ``paid`` is final (a late failure or expiry does
not undo money received); ``failed`` (a declined card; the payer may retry and pay) and ``expired``
(the checkout timed out) may still become ``paid``. Each change writes one audit entry, in the same
transaction as the change.
"""

from __future__ import annotations

import secrets
from datetime import datetime
from typing import Any

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession

from agent_server.billing.audit import audit_entry
from agent_server.billing.money import decimal_text
from agent_server.billing.tables import BillingOrder
from agent_server.foundation.timeutil import iso
from agent_server.site.tables import OrderRecord

STATUSES = ("pending", "paid", "failed", "expired")
# The states an order may come from to reach each state.
FROM = {"paid": ("pending", "failed", "expired"), "failed": ("pending",), "expired": ("pending", "failed")}


def new_order_id() -> str:
    return f"bord_{secrets.token_hex(12)}"


async def mark(session: AsyncSession, reference: str, status: str, at: datetime, *, source: str) -> bool:
    """Move the order ``reference`` (a tenant's or the public site's) to ``status`` if its current
    state allows it; True when it changed. ``source`` (the provider event) goes into the audit entry."""
    if status not in FROM:
        raise ValueError(f"orders are marked paid, failed or expired, not {status}")
    for table in (BillingOrder, OrderRecord):
        changed = await session.execute(
            update(table)
            .where(table.id == reference, table.status.in_(FROM[status]))  # type: ignore[attr-defined]
            .values(status=status, updated_at=at)
        )
        if not changed.rowcount:  # type: ignore[attr-defined]
            continue
        tenant_id = None
        if table is BillingOrder:
            order = await session.get(BillingOrder, reference)
            tenant_id = order.tenant_id if order else None
        details = {"status": status, "source": source}
        session.add(audit_entry(tenant_id, f"billing.order.{status}", at, target=reference, details=details))
        return True
    return False


def order_view(order: BillingOrder) -> dict[str, Any]:
    """The JSON of a tenant's order (amounts in minor units, with the decimal text for people)."""
    return {
        "object": "order",
        "order_id": order.id,
        "status": order.status,
        "provider": order.provider,
        "item": {"kind": order.item_kind, "id": order.item_id, "name": order.item_name},
        "quantity": order.quantity,
        "details": order.details,
        "currency": order.currency,
        "unit_amount_minor": order.unit_amount_minor,
        "amount_minor": order.amount_minor,
        "amount": decimal_text(order.amount_minor, order.currency),
        "session_ref": order.provider_ref,
        "checkout_url": order.checkout_url,
        "created_at": iso(order.created_at),
        "expires_at": iso(order.expires_at),
    }
