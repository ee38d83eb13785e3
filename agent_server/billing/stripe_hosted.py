"""The provider's hosted pages, one small function each: Checkout and the Billing Portal.

Only the real provider serves them; the Stripe-compatible server the tests run (localstripe) has
neither, so these two calls are the part of the Stripe adapter no test reaches. The routes that use
them are tested through the sandbox adapter, whose own pages stand in (docs/billing.md, "Coverage").
"""

from __future__ import annotations

import uuid
from typing import Any

from agent_server.billing.port import HostedSession

PORTAL_SECONDS = 300  # a portal session's URL is short-lived at the provider


async def hosted_checkout(client: Any, params: dict[str, Any], now: int) -> HostedSession:
    """A Checkout Session (``mode`` subscription or payment) on the provider's own page."""
    session = await client.v1.checkout.sessions.create_async(params, {"idempotency_key": str(uuid.uuid4())})
    return HostedSession(session.id, session.url, max(0, int(session.expires_at) - now))


async def billing_portal(client: Any, customer_id: str, return_url: str) -> HostedSession:
    """A Billing Portal session: the customer manages cards, invoices and the subscription there."""
    session = await client.v1.billing_portal.sessions.create_async(
        {"customer": customer_id, "return_url": return_url}
    )
    return HostedSession(session.id, session.url, PORTAL_SECONDS)
