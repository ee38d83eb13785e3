"""Requiring single sign-on from the dashboard: a confirmation page that says who will be signed out
and who will be locked out (``GET /admin/sso/enforcement-impact``), then the switch
(``PATCH /admin/sso``). Switching it on ends the sessions of every member who is not a platform
administrator, the admin's own included: the answer then leads to the sign-in page."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import Form, Request
from fastapi.responses import HTMLResponse, Response

from agent_server.foundation.errors import AgentError
from http_facade.pages.dashboard.audit_trail import audited
from http_facade.pages.dashboard.plan_gate import plan_gate
from http_facade.pages.dashboard.route import (
    DashboardForm,
    SessionDep,
    actor_of,
    checked,
    dashboard_router,
    page,
    responses,
    see_other,
)
from http_facade.pages.dashboard.sso_views import SSO_PAGE, sso_page
from http_facade.pages.dashboard.tenant import tenant_of
from http_facade.routes import admin_sso

router = dashboard_router()
ENFORCEMENT = f"{SSO_PAGE}/enforcement"


class EnforcementForm(DashboardForm):
    enforced: Literal["true", "false"]


@router.get(
    ENFORCEMENT, summary="Dashboard: confirm requiring single sign-on (who is signed out, who locked out)"
)
async def confirm(request: Request, session: SessionDep) -> HTMLResponse:
    actor = actor_of(request, session)
    _, plan = await tenant_of(request, session)
    context = {
        "impact": await admin_sso.enforcement_impact(request, actor),
        "overview": await admin_sso.overview(request, actor),
        "gate": plan_gate(request, plan, "sso"),
        "me_kept": session.platform,
    }
    return page(request, "sso_enforcement.html", context, session=session)


@router.post(
    ENFORCEMENT,
    summary="Dashboard: require single sign-on (members' sessions end) or stop requiring it",
    responses=responses(409),
)
async def switch(request: Request, form: Annotated[EnforcementForm, Form()], session: SessionDep) -> Response:
    checked(request, form)
    enforced = form.enforced == "true"
    try:
        async with audited(
            request, session.user_id, session.tenant_id, "sso.enforcement", details={"enforced": enforced}
        ):
            body = admin_sso.EnforcementBody(enforced=enforced)
            await admin_sso.patch_enforcement(body, request, actor_of(request, session))
    except AgentError as err:
        return await sso_page(request, session, error=err, section="enforcement")
    # Switched on, this session has ended unless its user is a platform administrator: the page then
    # answers with the sign-in page, where the SSO form brings the admin back.
    return see_other(f"{SSO_PAGE}?done={'enforced' if enforced else 'not-enforced'}")
