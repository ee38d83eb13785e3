"""Every router of the public site API, in the order ``create_app`` includes them (after the chat
proxy's, ``site_chat.chat_router(settings)``: its token header follows the deployment's prefix)."""

from __future__ import annotations

from fastapi import APIRouter

from http_facade.routes import (
    acp_checkout,
    site_ask,
    site_catalogue,
    site_commerce,
    site_jobs,
    site_leads,
    site_status,
)

SITE_ROUTERS: tuple[APIRouter, ...] = tuple(
    module.router
    for module in (site_ask, site_jobs, site_catalogue, site_commerce, site_leads, site_status, acp_checkout)
)
