"""The tenant dashboard under ``/app`` (docs/pages.md, "Dashboard"): the HTML face of the JSON APIs.

One module per area; each page calls the services its JSON twin calls and renders a template of
``templates/dashboard/``. ``DASHBOARD_ROUTER`` holds them all, for ``install_pages``.
"""

from __future__ import annotations

from fastapi import APIRouter

from http_facade.pages.dashboard import (
    account,
    agent_commerce,
    agent_commerce_forms,
    audit_log,
    auth,
    batches,
    billing,
    byok,
    connected_apps,
    invitation,
    keys,
    leads,
    logs,
    members,
    oauth_consent,
    overview,
    passkeys,
    password,
    playground,
    register,
    routing,
    sso,
    sso_domains,
    sso_enforcement,
    tenants,
    usage,
    webhook_manage,
    webhooks,
)

AREA_ROUTERS: tuple[APIRouter, ...] = tuple(
    area.router
    for area in (auth, register, password, overview, keys, usage, logs, batches, webhooks, webhook_manage, playground, routing,
                 audit_log, passkeys, sso, sso_domains, sso_enforcement, byok, billing, tenants, members, account, invitation, leads,
                 agent_commerce, agent_commerce_forms, oauth_consent, connected_apps)
)  # fmt: skip
DASHBOARD_ROUTER = APIRouter()
for _router in AREA_ROUTERS:
    DASHBOARD_ROUTER.include_router(_router)
