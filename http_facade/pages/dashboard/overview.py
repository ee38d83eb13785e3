"""``/app``: the overview of the signed-in admin's organisation: plan, trial, keys, the month so far
against the plan (``month_to_date`` of ``GET /admin/usage``), and until its first request, how to
make one (the snippets of ``snippets.py``)."""

from __future__ import annotations

from fastapi import Request
from fastapi.responses import HTMLResponse

from agent_server.foundation.timeutil import iso
from agent_server.gateway.repository import list_keys
from agent_server.gateway.usage_month import month_to_date
from agent_server.gateway.usage_report import has_usage
from http_facade.pages.dashboard.route import SessionDep, dashboard_router, page
from http_facade.pages.dashboard.session import APP_PATH
from http_facade.pages.dashboard.snippets import first_request
from http_facade.pages.dashboard.tenant import tenant_of
from http_facade.pages.dashboard.usage import USAGE_HELPERS

router = dashboard_router()


@router.get(APP_PATH, summary="Dashboard: overview of the organisation")
async def overview(request: Request, session: SessionDep, welcome: bool = False) -> HTMLResponse:
    tenant, plan = await tenant_of(request, session)
    gateway = request.app.state.gateway
    keys = await list_keys(gateway.db, session.tenant_id)
    month = await month_to_date(gateway, session.tenant_id)  # writes what the usage writer holds first
    context = {
        **USAGE_HELPERS,
        "tenant": tenant,
        "plan": plan,
        "trial_ends_at": iso(tenant.trial_ends_at),
        "active_keys": sum(1 for key in keys if key.revoked_at is None),
        "welcome": welcome,
        "month": month,
        "first_request": None,
    }
    if not await has_usage(gateway.db, session.tenant_id):
        context["first_request"] = await first_request(request, plan)
    return page(request, "overview.html", context, session=session)
