"""Single sign-on settings, read-only: what ``GET /admin/sso`` and ``GET /admin/sso/saml`` answer
(connections without secrets, domains and their DNS records, enforcement, what the identity provider
needs from us). Changes stay with the JSON API (docs/accounts.md, "Single sign-on")."""

from __future__ import annotations

from fastapi import Request
from fastapi.responses import HTMLResponse

from http_facade.pages.dashboard.route import SessionDep, actor_of, dashboard_router, page
from http_facade.pages.dashboard.session import APP_PATH
from http_facade.pages.dashboard.tenant import tenant_of
from http_facade.routes import admin_sso, sso_saml

router = dashboard_router()


@router.get(f"{APP_PATH}/sso", summary="Dashboard: single sign-on settings (read-only)")
async def sso_page(request: Request, session: SessionDep) -> HTMLResponse:
    actor = actor_of(request, session)
    _, plan = await tenant_of(request, session)
    context = {
        "overview": await admin_sso.overview(request, actor),
        "saml": await sso_saml.get_settings(request, actor),
        "plan": plan,
        "plan_has_sso": "sso" in plan.features,
    }
    return page(request, "sso.html", context, session=session)
