"""The billing route group (spec 4.3) under ``/{settings.billing_path_segment}``, for ``create_app``.

``install_billing(app, billing)`` includes the routers, makes the segment answer in the gateway
envelope, and connects the sandbox provider's events to our own ``webhooks`` route: an in-process
HTTP call to the app, so sandbox events pass the same signature check and pipeline as the real
provider's (agent_server/billing/sandbox/events.py).
"""

from __future__ import annotations

import httpx
from fastapi import FastAPI

from agent_server.billing.sandbox.events import Deliver
from agent_server.billing.sandbox.provider import SandboxProvider
from agent_server.billing.signing import SIGNATURE_HEADER
from agent_server.billing.wiring import Billing
from http_facade.errors import add_gateway_prefix
from http_facade.routes import (
    billing_account,
    billing_checkout,
    billing_sandbox,
    billing_schedule,
    billing_subscription,
    billing_webhooks,
)

BILLING_ROUTERS = (
    billing_webhooks.router,
    billing_checkout.router,
    billing_account.router,
    billing_subscription.router,
    billing_schedule.router,
)


def install_billing(app: FastAPI, billing: Billing) -> None:
    prefix = f"/{billing.segment}"
    add_gateway_prefix(f"{prefix}/")
    for router in BILLING_ROUTERS:
        app.include_router(router, prefix=prefix)
    if isinstance(billing.provider, SandboxProvider):
        app.include_router(billing_sandbox.router, prefix=prefix)
        billing.provider.events.deliver = _to_own_webhooks(app, f"{prefix}/webhooks")


def _to_own_webhooks(app: FastAPI, path: str) -> Deliver:
    base_url = app.state.services.settings.public_base_url

    async def deliver(payload: bytes, signature: str) -> bool:
        headers = {"Content-Type": "application/json", SIGNATURE_HEADER: signature}
        transport = httpx.ASGITransport(app)
        async with httpx.AsyncClient(transport=transport, base_url=base_url) as client:
            answer = await client.post(path, content=payload, headers=headers)
        return answer.status_code < 300

    return deliver
