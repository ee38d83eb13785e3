"""``/app/connected-apps``: the OAuth clients a person allowed, and disconnecting one (docs/oauth.md).
Calls ``OAuthService`` as ``GET /admin/oauth/apps`` and ``DELETE /admin/oauth/apps?client_id=`` do."""

from __future__ import annotations

from typing import Annotated

from fastapi import Form, Request
from fastapi.responses import HTMLResponse, Response
from pydantic import Field

from agent_server.foundation.errors import AgentError
from http_facade.pages.dashboard.audit_trail import audited
from http_facade.pages.dashboard.route import (
    DashboardForm,
    SessionDep,
    checked,
    dashboard_router,
    page,
    see_other,
)
from http_facade.pages.dashboard.session import APP_PATH, Session

router = dashboard_router()
APPS_PAGE = f"{APP_PATH}/connected-apps"


class DisconnectForm(DashboardForm):
    client_id: str = Field(min_length=1, max_length=2000)


async def _page(
    request: Request, session: Session, *, error: AgentError | None = None, notice: str = ""
) -> HTMLResponse:
    apps = await request.app.state.oauth.connected_apps(session.user_id)
    context = {"apps": apps, "error": error, "notice": notice}
    return page(
        request, "connected_apps.html", context, session=session, status=error.http_status if error else 200
    )


@router.get(APPS_PAGE, summary="Dashboard: the apps you allowed to act for you (OAuth)")
async def apps_page(request: Request, session: SessionDep, done: str = "") -> HTMLResponse:
    return await _page(
        request, session, notice="The app is disconnected; its tokens no longer work." if done else ""
    )


@router.post(f"{APPS_PAGE}/disconnect", summary="Dashboard: disconnect an app (its tokens end at once)")
async def disconnect(
    request: Request, form: Annotated[DisconnectForm, Form()], session: SessionDep
) -> Response:
    checked(request, form)
    try:
        async with audited(
            request, session.user_id, session.tenant_id or "", "oauth.disconnect", target=form.client_id
        ):
            await request.app.state.oauth.disconnect(session.user_id, form.client_id)
    except AgentError as err:
        return await _page(request, session, error=err)
    return see_other(f"{APPS_PAGE}?done=1")
