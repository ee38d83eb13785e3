"""A tiny in-process event bus with typed events.

Publishers (key rotation today; usage thresholds, invoices later) call ``await bus.publish(event)``.
Two kinds of subscriber:

- **durable** subscribers are awaited inline, in subscription order, before ``publish`` returns.
  A webhook outbox subscribes this way: it persists ``event.envelope()`` (JSON-safe, with a stable
  ``id`` to deduplicate on) so delivery survives a crash after the publishing request returned.
- **plain** subscribers run as background tasks; a slow or failing one never delays the publisher.

A failing subscriber is logged with the event id and never breaks the publisher or other subscribers.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar, TypeVar

log = logging.getLogger("agentgate.events")


def _event_id() -> str:
    return "evt_" + secrets.token_hex(12)


@dataclass(frozen=True, kw_only=True)
class Event:
    """Base of every event; ``kind`` is the public name (the webhook event type)."""

    kind: ClassVar[str] = "event"
    tenant_id: str
    occurred_at: float
    id: str = field(default_factory=_event_id)

    def data(self) -> dict[str, Any]:
        """The event-specific fields."""
        body = asdict(self)
        for common in ("tenant_id", "occurred_at", "id"):
            body.pop(common)
        return body

    def envelope(self) -> dict[str, Any]:
        """The JSON-safe form a durable subscriber stores and a webhook would send."""
        return {
            "id": self.id,
            "type": self.kind,
            "created": int(self.occurred_at),
            "tenant_id": self.tenant_id,
            "data": self.data(),
        }


@dataclass(frozen=True, kw_only=True)
class KeyRotated(Event):
    kind: ClassVar[str] = "key.rotated"
    old_key_id: str
    new_key_id: str
    name: str
    old_key_revoked_at: str | None = None  # RFC 3339: when a rotation's overlap ends; None: at once

    def data(self) -> dict[str, Any]:
        body = super().data()
        if body["old_key_revoked_at"] is None:  # stopped at once: the payload as it always was
            del body["old_key_revoked_at"]
        return body


E = TypeVar("E", bound=Event)
Handler = Callable[[Any], Awaitable[None]]


@dataclass
class _Subscription:
    event_type: type[Event]
    handler: Handler
    durable: bool


class EventBus:
    def __init__(self) -> None:
        self._subscriptions: list[_Subscription] = []
        self._tasks: set[asyncio.Task[None]] = set()

    def subscribe(
        self, event_type: type[E], handler: Callable[[E], Awaitable[None]], *, durable: bool = False
    ) -> Callable[[], None]:
        """Call ``handler`` for every published ``event_type`` (subclasses included); returns an unsubscribe."""
        subscription = _Subscription(event_type, handler, durable)
        self._subscriptions.append(subscription)

        def unsubscribe() -> None:
            if subscription in self._subscriptions:
                self._subscriptions.remove(subscription)

        return unsubscribe

    async def publish(self, event: Event) -> None:
        for subscription in list(self._subscriptions):
            if not isinstance(event, subscription.event_type):
                continue
            if subscription.durable:
                await self._deliver(subscription.handler, event)
            else:
                task = asyncio.create_task(self._deliver(subscription.handler, event))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)

    async def drain(self) -> None:
        """Wait for background deliveries (at shutdown, and in tests)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    @staticmethod
    async def _deliver(handler: Handler, event: Event) -> None:
        try:
            await handler(event)
        except Exception:
            log.exception("event subscriber %r failed on %s %s", handler, event.kind, event.id)
