"""Requests for the discovery call, for platform administrators: what ``GET /admin/platform/leads``
answers, as a page (``/app/leads``, in the platform part of the navigation)."""

from __future__ import annotations

from fastapi import Request
from fastapi.responses import HTMLResponse

from http_facade.pages.dashboard.route import SessionDep, actor_of, dashboard_router, page, responses
from http_facade.pages.dashboard.session import APP_PATH
from http_facade.routes.admin_common import platform_actor
from http_facade.routes.site_leads import list_leads

router = dashboard_router()
LEADS_PAGE = f"{APP_PATH}/leads"


@router.get(
    LEADS_PAGE, summary="Dashboard: requests for the discovery call (platform admins)", responses=responses()
)
async def leads_page(request: Request, session: SessionDep) -> HTMLResponse:
    actor = await platform_actor(actor_of(request, session))  # 403 for anyone else
    listed = await list_leads(actor, request, limit=200)
    return page(request, "leads.html", {"leads": listed["data"]}, session=session)
