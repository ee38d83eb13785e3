"""Order events to the agent platform (ACP webhooks, ``order_create`` and ``order_update``) through the
project's durable delivery (agent_server/webhooks: leases, backoff, the attempt log).

A platform with a webhook URL gets one endpoint row of its own (tenant ``acp:<platform id>``, so no
tenant's admin sees it) keyed with the platform's signing secret; each event is one delivery row,
written in the transaction that changes the order. The body is the spec's ``{type, data: Order}``
and the worker adds ``Merchant-Signature`` to deliveries of ``acp.`` events."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from agent_server.commerce.tables import AgentPlatform
from agent_server.foundation.clock import Clock
from agent_server.foundation.timeutil import utc
from agent_server.webhooks.delivery import ACP_EVENT_PREFIX
from agent_server.webhooks.repository import new_id
from agent_server.webhooks.tables import WebhookDeliveryRecord, WebhookRecord

EVENTS = ("order_create", "order_update")


def endpoint_id(platform_id: str) -> str:
    return "wh_" + platform_id  # one endpoint per platform, found without a query


class OrderWebhooks:
    def __init__(self, clock: Clock, wake: Callable[[], None]) -> None:
        self.clock, self.wake = clock, wake

    async def queue(self, session: AsyncSession, platform_id: str, event: str, order: dict[str, Any]) -> bool:
        """Add the delivery of ``event`` to ``session`` (the order's transaction); False when the
        platform has no webhook endpoint (no URL, or revoked)."""
        hook = await session.get(WebhookRecord, endpoint_id(platform_id))
        if hook is None or not hook.enabled:
            return False
        now = utc(self.clock.now())
        body = {"type": event, "data": {**order, "type": "order"}}
        session.add(
            WebhookDeliveryRecord(
                id=new_id("dlv_"),
                webhook_id=hook.id,
                tenant_id=hook.tenant_id,
                event_id=new_id("evt_"),
                event_type=ACP_EVENT_PREFIX + event,
                payload=json.dumps(body, separators=(",", ":"), ensure_ascii=False),
                next_attempt_at=now,
                created_at=now,
            )
        )
        return True


def endpoint_for(platform: AgentPlatform) -> WebhookRecord:
    """The delivery endpoint of a platform with a webhook URL, made with the platform."""
    assert platform.webhook_url
    return WebhookRecord(
        id=endpoint_id(platform.id),
        tenant_id=f"acp:{platform.id}",
        url=platform.webhook_url,
        events=[ACP_EVENT_PREFIX + name for name in EVENTS],
        description=f"ACP order events of {platform.name}"[:200],
        secret_encrypted=platform.signing_secret_encrypted,
        created_at=platform.created_at,
    )
