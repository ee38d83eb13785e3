"""Agentic commerce, built once by ``create_app`` and kept in ``services.extras`` so the REST routes
and the MCP tools reach the same instance (one implementation, two transports)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agent_server.admin.wiring import admin_services
from agent_server.billing.config import billing_provider
from agent_server.capabilities.services import Services
from agent_server.commerce.offer import Offer
from agent_server.commerce.orders import Orders
from agent_server.commerce.payment import delegated_payments
from agent_server.commerce.platforms import Platforms
from agent_server.commerce.protocol import AcpProtocol
from agent_server.commerce.sessions import CheckoutSessions
from agent_server.commerce.webhooks import OrderWebhooks
from agent_server.foundation.errors import Unavailable
from agent_server.foundation.secret_box import SecretBox
from agent_server.policies.idempotency import IdempotencyStore
from agent_server.webhooks.url_guard import UrlGuard

COMMERCE_KEY = "commerce"
API_BASE = "/agentic_commerce"  # the contract's route group; ACP paths follow (/checkout_sessions)


@dataclass
class Commerce:
    platforms: Platforms
    orders: Orders
    sessions: CheckoutSessions
    protocol: AcpProtocol


def links(services: Services, base_url: str) -> list[dict[str, Any]]:
    """The site's own pages (each a live page, tested) and the support address."""
    company = services.knowledge.pack.company
    pack = services.knowledge.pack
    return [
        {"type": "terms_of_use", "url": f"{base_url}/terms", "title": pack.terms.title},
        {"type": "privacy_policy", "url": f"{base_url}/privacy", "title": pack.privacy.title},
        {"type": "faq", "url": f"{base_url}/faq", "title": "FAQ"},
        {"type": "about_us", "url": f"{base_url}/", "title": company.name},
        {"type": "support", "url": f"mailto:{company.contact.support}", "title": "Support"},
    ]


def build_commerce(services: Services, idempotency: IdempotencyStore) -> Commerce:
    settings, clock = services.settings, services.clock
    base_url = settings.public_base_url.rstrip("/")
    platforms = Platforms(
        services.db, clock, SecretBox.from_settings(settings), UrlGuard.for_mode(settings.sandbox)
    )
    webhooks = OrderWebhooks(clock, admin_services(services).worker.wake)  # the durable delivery
    payments = delegated_payments(billing_provider(services))
    orders = Orders(services.db, clock, base_url, webhooks, payments)
    sessions = CheckoutSessions(
        services.db,
        clock,
        lambda: Offer(services.knowledge.pack),
        payments,
        orders,
        links(services, base_url),
    )
    commerce = Commerce(platforms, orders, sessions, AcpProtocol(platforms, sessions, idempotency, clock))
    services.extras[COMMERCE_KEY] = commerce
    return commerce


def commerce_of(services: Services) -> Commerce:
    commerce = services.extras.get(COMMERCE_KEY)
    if commerce is None:
        raise Unavailable("Agentic commerce is not set up in this process.")
    return commerce
