"""What an ``agentgate worker`` process adds to run batch slices (the server has all of it already).

A slice runs lines through the gateway path, so the worker holds a started ``Gateway`` (plans, key
lookups, the usage writer), the billing standing gate ``Gateway.entitle`` reads (a tenant whose
payment is overdue is refused in a batch as in a live call), and the webhook outbox: the
``batch.completed`` and ``batch.failed`` events it publishes become delivery rows that the servers'
delivery workers send.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from agent_server.admin.wiring import admin_services
from agent_server.batches.wiring import build_batches
from agent_server.capabilities.services import Services
from agent_server.files.service import files_for
from agent_server.foundation.tasks import stop_tasks
from agent_server.gateway.service import Gateway
from agent_server.site.build import Site
from agent_server.webhooks.dispatcher import subscribe


@asynccontextmanager
async def batch_worker(services: Services, site: Site) -> AsyncIterator[None]:
    from agent_server.billing.wiring import build_billing  # the provider's client: only here

    gateway = Gateway(services)
    billing = build_billing(services, gateway)
    files = files_for(services)
    _, runner = build_batches(gateway, files, site.jobs)
    site.housekeeping += [files.purge, runner.resume_stalled]
    unsubscribe = subscribe(services.events, admin_services(services).webhooks, lambda: None)
    async with gateway.running():
        engine = billing.engine
        gate = asyncio.create_task(engine.gate.run(engine.standing_every), name="billing-standing")
        try:
            yield
        finally:
            await stop_tasks([gate])
            unsubscribe()
