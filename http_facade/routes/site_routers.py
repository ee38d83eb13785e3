"""Every router of the public site API, in the order ``create_app`` includes them (after the chat
proxy's, ``site_chat.chat_router(settings)``: its token header follows the deployment's prefix), and
then the Agentic Commerce Protocol's, built at the first request under its prefix
(http_facade/deferred_routes.py): its request and response models are the site's largest."""

from __future__ import annotations

from fastapi import APIRouter

from http_facade.exact_routes import ExactRoutesApp
from http_facade.routes import (
    site_ask,
    site_catalogue,
    site_commerce,
    site_jobs,
    site_leads,
    site_status,
)

SITE_ROUTERS: tuple[APIRouter, ...] = tuple(
    module.router for module in (site_ask, site_jobs, site_catalogue, site_commerce, site_leads, site_status)
)
AGENTIC_COMMERCE_PREFIXES = ("/agentic_commerce/",)


def install_agentic_commerce(app: ExactRoutesApp) -> None:
    from http_facade.routes import acp_checkout

    app.include_router(acp_checkout.router)
