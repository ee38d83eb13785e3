"""The billing route group (spec 4.3) under ``/{settings.billing_path_segment}``, for ``create_app``.

``install_billing(app, billing)`` makes the segment answer in the gateway envelope, connects the
sandbox provider's events to our own ``webhooks`` route (an in-process HTTP call to the app, so
sandbox events pass the same signature check and pipeline as the real provider's,
agent_server/billing/sandbox/events.py), and holds the routers' place: they are imported and
included at the first request under the segment (http_facade/deferred_routes.py), as most workers
never serve one.
"""

from __future__ import annotations

import httpx
from fastapi import FastAPI

from agent_server.billing.sandbox.events import Deliver
from agent_server.billing.sandbox.provider import SandboxProvider
from agent_server.billing.signing import SIGNATURE_HEADER
from agent_server.billing.wiring import Billing
from http_facade.errors import add_gateway_prefix
from http_facade.exact_routes import ExactRoutesApp


def install_billing(app: ExactRoutesApp, billing: Billing) -> None:
    prefix = f"/{billing.segment}"
    add_gateway_prefix(f"{prefix}/")
    sandbox = isinstance(billing.provider, SandboxProvider)
    app.defer("billing", (f"{prefix}/",), lambda app: _include_routers(app, prefix, sandbox=sandbox))
    if sandbox:
        billing.provider.events.deliver = _to_own_webhooks(app, f"{prefix}/webhooks")


def _include_routers(app: FastAPI, prefix: str, *, sandbox: bool) -> None:
    from http_facade.routes import (
        billing_account,
        billing_checkout,
        billing_sandbox,
        billing_schedule,
        billing_subscription,
        billing_webhooks,
    )

    routers = [billing_webhooks, billing_checkout, billing_account, billing_subscription, billing_schedule]
    for module in [*routers, *([billing_sandbox] if sandbox else [])]:
        app.include_router(module.router, prefix=prefix)


def _to_own_webhooks(app: FastAPI, path: str) -> Deliver:
    base_url = app.state.services.settings.public_base_url

    async def deliver(payload: bytes, signature: str) -> bool:
        headers = {"Content-Type": "application/json", SIGNATURE_HEADER: signature}
        transport = httpx.ASGITransport(app)
        async with httpx.AsyncClient(transport=transport, base_url=base_url) as client:
            answer = await client.post(path, content=payload, headers=headers)
        return answer.status_code < 300

    return deliver
