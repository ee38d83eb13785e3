"""The audit log (``GET /admin/audit``): the organisation's entries, newest first, with filters."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import Query, Request
from fastapi.responses import HTMLResponse

from agent_server.admin.wiring import admin_services
from agent_server.errors import PlanLimitExceeded
from http_facade.pages.dashboard.route import SessionDep, actor_of, dashboard_router, page, responses
from http_facade.pages.dashboard.session import APP_PATH
from http_facade.routes.admin_audit import list_audit

router = dashboard_router()
FLAGGED = {"all": None, "flagged": True, "unflagged": False}


@router.get(
    f"{APP_PATH}/audit",
    summary="Dashboard: the audit log (who did what, when, from where; flagged entries)",
    responses=responses(),
)
async def audit_page(
    request: Request,
    session: SessionDep,
    show: Literal["all", "flagged", "unflagged"] = "all",
    action: Annotated[str, Query(max_length=100)] = "",
) -> HTMLResponse:
    admin = admin_services(request.app.state.services)
    context = {"show": show, "action": action, "entries": [], "error": None}
    try:
        listed = await list_audit(
            actor_of(request, session),
            request,
            admin,
            limit=200,
            flagged=FLAGGED[show],
            action=action or None,
        )
    except PlanLimitExceeded as err:  # the plan has no audit log: say so on the page
        context["error"] = err
        return page(request, "audit.html", context, session=session, status=err.http_status)
    context["entries"] = listed["data"]
    return page(request, "audit.html", context, session=session)
