"""Billing, built once by ``create_app``: the provider, the event engine and the tenant routes' use cases.

``build_billing(services, gateway)`` returns the ``Billing`` the routes read from ``app.state.billing``;
``running()`` is its lifespan step (the engine's standing scan and period pass, engine.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from agent_server.admin.audit import AuditLog
from agent_server.admin.wiring import admin_services
from agent_server.billing.config import billing_provider
from agent_server.billing.customers import Customers, Who
from agent_server.billing.engine import BillingEngine, billing_engine
from agent_server.billing.order_events import OrderEvents
from agent_server.billing.plan_checkout import PlanCheckouts
from agent_server.billing.port import BillingProvider, CustomerDetails, HostedSession
from agent_server.billing.pricebook import PriceBooks
from agent_server.billing.purchases import Purchases
from agent_server.billing.status import BillingStatus
from agent_server.billing.sync import sync_models
from agent_server.billing.urls import ReturnUrls
from agent_server.capabilities.services import Services
from agent_server.gateway.service import Gateway


@dataclass
class Billing:
    provider: BillingProvider
    engine: BillingEngine
    books: PriceBooks
    urls: ReturnUrls
    customers: Customers
    checkouts: PlanCheckouts
    purchases: Purchases
    status: BillingStatus
    audit: AuditLog
    segment: str

    async def customer(self, who: Who, details: CustomerDetails) -> tuple[str, bool]:
        """Create or update the tenant's customer; (customer id, created now)."""
        account, created = await self.customers.ensure(who, details)
        fields = sorted(k for k, v in vars(details).items() if v is not None)
        await self.audit.record(
            actor=who.user_id,
            tenant_id=who.tenant_id,
            action="billing.customer.create" if created else "billing.customer.update",
            target=account.customer_id,
            ip=who.ip,
            details={"fields": fields, "provider": self.provider.name},
        )
        return account.customer_id or "", created

    async def portal(self, who: Who, return_url: str | None) -> HostedSession:
        back = self.urls.checked(return_url, self.urls.portal_return(), "return_url")
        account, _ = await self.customers.ensure(who)
        return await self.provider.portal(account.customer_id or "", back)

    async def sync_models(self, who: Who) -> dict[str, Any]:
        result = await sync_models(self.provider, self.books.current())
        await self.audit.record(
            actor=who.user_id,
            tenant_id=who.tenant_id,
            action="billing.sync_models",
            ip=who.ip,
            details={
                "provider": self.provider.name,
                "created": len(result["created"]),
                "kept": len(result["kept"]),
            },
        )
        return result

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Billing]:
        async with self.engine.running():
            yield self


def build_billing(services: Services, gateway: Gateway) -> Billing:
    settings, db, clock = services.settings, services.db, services.clock
    provider = billing_provider(services)
    segment = settings.billing_path_segment
    engine = billing_engine(services, gateway, provider, orders=OrderEvents(clock))
    books = PriceBooks(services.knowledge)
    urls = ReturnUrls(settings)
    audit = admin_services(services).audit
    customers = Customers(db, clock, provider)
    status_url = f"{settings.public_base_url.rstrip('/')}/{segment}/status"
    return Billing(
        provider=provider,
        engine=engine,
        books=books,
        urls=urls,
        customers=customers,
        checkouts=PlanCheckouts(db, clock, customers, books, urls, audit, segment),
        purchases=Purchases(db, clock, customers, books, urls, audit),
        status=BillingStatus(db, customers, books, status_url),
        audit=audit,
        segment=segment,
    )
