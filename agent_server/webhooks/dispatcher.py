"""From the internal event bus to durable webhook deliveries.

The dispatcher is a *durable* subscriber of agent_server/foundation/events.py: ``publish`` awaits it, so the
delivery rows are committed before the publishing request (e.g. ``POST /admin/keys/rotate``)
answers. A crash after that loses nothing: the worker finds the rows on the next start.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agent_server.foundation.events import Event, EventBus
from agent_server.webhooks.repository import EVENT_TYPES, WebhookRepository


@dataclass(frozen=True, kw_only=True)
class UsageThresholdReached(Event):
    kind = "usage.threshold_reached"
    percent: int
    month: str
    tokens_used: int
    monthly_quota: int


@dataclass(frozen=True, kw_only=True)
class InvoiceCreated(Event):
    """Published by billing when the payment provider reports a new invoice (docs/billing.md)."""

    kind = "invoice.created"
    invoice_id: str
    amount_cents: int
    currency: str


@dataclass(frozen=True, kw_only=True)
class AuditFlagged(Event):
    kind = "audit.flagged"
    audit_id: int
    action: str
    actor: str
    reason: str
    target: str | None = None


def subscribe(bus: EventBus, repository: WebhookRepository, wake: Callable[[], None]) -> Callable[[], None]:
    """Turn every published event of a public kind into deliveries; returns the unsubscribe."""

    async def on_event(event: Event) -> None:
        if event.kind not in EVENT_TYPES:
            return
        data: dict[str, Any] = event.data()
        ids = await repository.enqueue(
            event.tenant_id, event.kind, data, event_id=event.id, occurred_at=event.occurred_at
        )
        if ids:
            wake()

    return bus.subscribe(Event, on_event, durable=True)
