"""``/app``: the overview of the signed-in admin's organisation (plan, trial, keys) with its links."""

from __future__ import annotations

from fastapi import Request
from fastapi.responses import HTMLResponse

from agent_server.gateway.repository import list_keys
from agent_server.timeutil import iso
from http_facade.pages.dashboard.route import SessionDep, dashboard_router, page
from http_facade.pages.dashboard.session import APP_PATH
from http_facade.pages.dashboard.tenant import tenant_of

router = dashboard_router()


@router.get(APP_PATH, summary="Dashboard: overview of the organisation")
async def overview(request: Request, session: SessionDep, welcome: bool = False) -> HTMLResponse:
    tenant, plan = await tenant_of(request, session)
    keys = await list_keys(request.app.state.gateway.db, session.tenant_id)
    context = {
        "tenant": tenant,
        "plan": plan,
        "trial_ends_at": iso(tenant.trial_ends_at),
        "active_keys": sum(1 for key in keys if key.revoked_at is None),
        "welcome": welcome,
    }
    return page(request, "overview.html", context, session=session)
