"""Provider events about one-off checkouts, applied to orders: the order handler of the event pipeline.

``handle_order_object(session, obj)`` is what ``EventPipeline(orders=...)`` calls inside its
transaction with the event's object. The object alone says what happened, so one handler serves
every event about a one-off payment:

| object | state | order becomes |
|---|---|---|
| ``checkout.session`` (mode payment) | ``complete`` and ``payment_status`` paid | paid |
| ``checkout.session`` | ``expired`` | expired |
| ``payment_intent`` | ``succeeded`` | paid |
| ``payment_intent`` | a ``last_payment_error`` (declined) | failed |

The order is named by ``client_reference_id`` or ``metadata.reference`` (set by ``one_off_checkout``).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from agent_server.billing import orders
from agent_server.foundation.clock import Clock
from agent_server.foundation.timeutil import utc


def order_reference(obj: dict[str, Any]) -> str | None:
    metadata = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    found = obj.get("client_reference_id") or metadata.get("reference")
    return found if isinstance(found, str) and found else None


def outcome_of(obj: dict[str, Any]) -> str | None:
    """The order state an event object reports, or None when it reports none (e.g. still open)."""
    kind, status = obj.get("object"), obj.get("status")
    if kind == "checkout.session":
        if status == "complete" and obj.get("payment_status") in ("paid", "no_payment_required"):
            return "paid"
        return "expired" if status == "expired" else None
    if kind == "payment_intent":
        if status == "succeeded":
            return "paid"
        return "failed" if obj.get("last_payment_error") else None
    return None


class OrderEvents:
    def __init__(self, clock: Clock) -> None:
        self.clock = clock

    async def __call__(self, session: AsyncSession, obj: dict[str, Any]) -> str:
        """``applied`` (the order moved), ``stale`` (its state already says more), ``ignored`` (no
        order or no outcome in this object)."""
        reference, outcome = order_reference(obj), outcome_of(obj)
        if reference is None or outcome is None:
            return "ignored"
        source = f"{obj.get('object')}:{obj.get('id')}"
        changed = await orders.mark(session, reference, outcome, utc(self.clock.now()), source=source)
        return "applied" if changed else "stale"
