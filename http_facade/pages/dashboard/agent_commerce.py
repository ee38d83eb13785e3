"""Agentic commerce for platform administrators: the agent platforms and their orders, as
``GET /admin/platform/agent-platforms`` and ``GET /admin/platform/agent-orders`` answer them
(``/app/agent-commerce``, in the platform part of the navigation; docs/agentic-commerce.md)."""

from __future__ import annotations

from fastapi import Request
from fastapi.responses import HTMLResponse

from http_facade.pages.dashboard.route import SessionDep, actor_of, dashboard_router, page, responses
from http_facade.pages.dashboard.session import APP_PATH
from http_facade.routes.admin_commerce import list_orders, list_platforms
from http_facade.routes.admin_common import platform_actor

router = dashboard_router()
AGENT_COMMERCE_PAGE = f"{APP_PATH}/agent-commerce"


@router.get(
    AGENT_COMMERCE_PAGE,
    summary="Dashboard: agent platforms and the orders they placed (platform admins)",
    responses=responses(),
)
async def agent_commerce_page(request: Request, session: SessionDep) -> HTMLResponse:
    actor = await platform_actor(actor_of(request, session))  # 403 for anyone else
    platforms = (await list_platforms(actor, request))["data"]
    orders = (await list_orders(actor, request, limit=200))["data"]
    names = {platform["id"]: platform["name"] for platform in platforms}
    context = {"platforms": platforms, "orders": orders, "names": names}
    return page(request, "agent_commerce.html", context, session=session)
