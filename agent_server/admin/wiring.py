"""Builds the administration services once per app and runs their background tasks."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from agent_server.admin.audit import AuditLog
from agent_server.admin.connectors import Connectors
from agent_server.admin.csp import CspReports
from agent_server.admin.traces import Traces
from agent_server.capabilities.services import Services
from agent_server.foundation.secret_box import SecretBox
from agent_server.foundation.tasks import stop_tasks
from agent_server.webhooks.delivery import DeliveryWorker
from agent_server.webhooks.dispatcher import subscribe
from agent_server.webhooks.repository import WebhookRepository
from agent_server.webhooks.thresholds import ThresholdMonitor
from agent_server.webhooks.url_guard import UrlGuard

log = logging.getLogger("agentgate.admin")
EXTRAS_KEY = "admin"


@dataclass
class AdminServices:
    box: SecretBox
    guard: UrlGuard
    webhooks: WebhookRepository
    worker: DeliveryWorker
    thresholds: ThresholdMonitor
    audit: AuditLog
    connectors: Connectors
    traces: Traces
    csp: CspReports


def admin_services(services: Services) -> AdminServices:
    """The app's admin services, built on first use and kept in ``services.extras``."""
    existing = services.extras.get(EXTRAS_KEY)
    if existing is not None:
        return existing
    settings, db, clock = services.settings, services.db, services.clock
    box = SecretBox.from_settings(settings)
    guard = UrlGuard.for_mode(settings.sandbox, nameservers=settings.dns_nameservers)
    admin = AdminServices(
        box=box,
        guard=guard,
        webhooks=WebhookRepository(db, box, clock, guard, settings.webhook_max_per_tenant),
        worker=DeliveryWorker(
            db,
            box,
            clock,
            guard,
            timeout=settings.webhook_timeout_seconds,
            retry_hours=settings.webhook_retry_hours,
            header_prefix=settings.header_prefix,
        ),
        thresholds=ThresholdMonitor(db, clock, services.events),
        audit=AuditLog(
            db,
            clock,
            services.events,
            failed_login_limit=settings.audit_failed_login_limit,
            failed_login_window=settings.audit_failed_login_window_seconds,
        ),
        connectors=Connectors(db, box, clock),
        traces=Traces(db, clock),
        csp=CspReports(db, clock),
    )
    services.extras[EXTRAS_KEY] = admin
    return admin


async def _thresholds_loop(admin: AdminServices, every: float) -> None:
    while True:
        await asyncio.sleep(every)
        try:
            await admin.thresholds.scan()
        except Exception:  # the next scan retries; the hits table keeps it exactly-once
            log.exception("usage threshold scan failed")


@asynccontextmanager
async def admin_running(services: Services) -> AsyncIterator[AdminServices]:
    """Lifespan step: subscribe webhooks to the event bus; run the delivery worker and threshold scan."""
    admin = admin_services(services)
    unsubscribe = subscribe(services.events, admin.webhooks, admin.worker.wake)
    tasks: list[asyncio.Task[None]] = []
    settings = services.settings
    if settings.webhook_worker:
        tasks.append(
            asyncio.create_task(admin.worker.run(settings.webhook_poll_seconds), name="webhook-worker")
        )
        tasks.append(
            asyncio.create_task(
                _thresholds_loop(admin, settings.usage_threshold_check_seconds), name="usage-thresholds"
            )
        )
    try:
        yield admin
    finally:
        await stop_tasks(tasks)
        unsubscribe()
