"""The audit log (``GET /admin/audit``): the organisation's entries, newest first, with filters.

Entries name their actor by user id (a failed sign-in by the address typed); the page shows the
person's e-mail address instead, with the id beside it.
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import Query, Request
from fastapi.responses import HTMLResponse
from sqlmodel import col, select

from agent_server.admin.wiring import admin_services
from agent_server.foundation.errors import PlanLimitExceeded
from agent_server.gateway.tables import User
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
    context = {"show": show, "action": action, "entries": [], "people": {}, "error": None}
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
    context["people"] = await _emails(request, {entry["actor"] for entry in listed["data"]})
    return page(request, "audit.html", context, session=session)


async def _emails(request: Request, actors: set[str]) -> dict[str, str]:
    """User id to e-mail address, for the actors that are users (one query)."""
    ids = sorted(actor for actor in actors if actor and "@" not in actor)
    if not ids:
        return {}
    async with request.app.state.gateway.db.session() as session:
        rows = await session.execute(select(User.id, User.email).where(col(User.id).in_(ids)))
    return {user_id: email for user_id, email in rows.all()}
