"""``/app/account``: one's own account, for every signed-in person (members of no organisation too).

Change the password (``Credentials.change``, as ``POST /admin/auth/password``: the current one is
needed, every other session ends, this browser gets a new session), sign out everywhere
(``Credentials.sign_out``, as ``POST /admin/auth/logout``) and leave the organisation
(``Members.leave``, as ``DELETE /admin/membership``). A person without an organisation lands here
after signing in: the page says so and how to join one.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Form, Request
from fastapi.responses import HTMLResponse, Response
from pydantic import Field

from agent_server.accounts.members import Acting
from agent_server.accounts.roles import ROLE_TEXT
from agent_server.foundation.errors import AgentError
from agent_server.gateway.tables import Tenant, User
from http_facade.pages.dashboard.audit_trail import audited
from http_facade.pages.dashboard.route import (
    DashboardForm,
    SessionDep,
    checked,
    dashboard_router,
    page,
    responses,
    see_other,
)
from http_facade.pages.dashboard.session import APP_PATH, LOGIN_PATH, Session, end_session, start_session

router = dashboard_router()
ACCOUNT_PAGE = f"{APP_PATH}/account"
NOTICES = {
    "password": "Your password is changed; every other session of yours has ended.",
    "joined": "Welcome: you are a member of the organisation now.",
}


class PasswordForm(DashboardForm):
    current_password: str = Field(default="", max_length=1024)
    new_password: str = Field(max_length=4096)


async def _account_page(
    request: Request, session: Session, *, error: AgentError | None = None, notice: str = ""
) -> HTMLResponse:
    async with request.app.state.services.db.session() as db:
        user = await db.get(User, session.user_id)
        tenant = await db.get(Tenant, session.tenant_id) if session.tenant_id else None
    context = {
        "user": user,
        "organisation": tenant.name if tenant else None,
        "role": session.role,
        "role_text": ROLE_TEXT.get(session.role or "", ""),
        "has_password": user is not None and user.password_hash is not None,
        "error": error,
        "notice": NOTICES.get(notice, ""),
    }
    return page(request, "account.html", context, session=session, status=error.http_status if error else 200)


@router.get(ACCOUNT_PAGE, summary="Dashboard: your account (password, sessions, organisation)")
async def account_page(request: Request, session: SessionDep, done: str = "") -> HTMLResponse:
    return await _account_page(request, session, notice=done[:20])


@router.post(
    f"{ACCOUNT_PAGE}/password",
    summary="Dashboard: change your password (every other session ends)",
    responses=responses(429),
)
async def change_password(
    request: Request, form: Annotated[PasswordForm, Form()], session: SessionDep
) -> Response:
    checked(request, form)
    credentials = request.app.state.accounts.credentials
    try:
        async with audited(request, session.user_id, session.tenant_id or "", "auth.password_change"):
            signed_in = await credentials.change(
                session.claims, form.current_password or None, form.new_password
            )
    except AgentError as err:
        return await _account_page(request, session, error=err)
    response = see_other(f"{ACCOUNT_PAGE}?done=password")
    start_session(response, request.app.state.services.settings, signed_in.access_token, signed_in.expires_in)
    return response


@router.post(
    f"{ACCOUNT_PAGE}/sign-out", summary="Dashboard: sign out everywhere (every session of yours ends)"
)
async def sign_out_everywhere(
    request: Request, form: Annotated[DashboardForm, Form()], session: SessionDep
) -> Response:
    checked(request, form)
    async with audited(request, session.user_id, session.tenant_id or "", "auth.logout") as note:
        await request.app.state.accounts.credentials.sign_out(session.user_id)
        note["details"]["everywhere"] = True
    response = see_other(f"{LOGIN_PATH}?signed_out=1")
    end_session(response, request.app.state.services.settings)
    return response


@router.post(
    f"{ACCOUNT_PAGE}/leave",
    summary="Dashboard: leave the organisation (not as its last owner); your sessions end",
    responses=responses(409),
)
async def leave(request: Request, form: Annotated[DashboardForm, Form()], session: SessionDep) -> Response:
    checked(request, form)
    acting = Acting(session.user_id, session.tenant_id, session.role)
    try:
        async with audited(
            request, session.user_id, session.tenant_id, "member.leave", target=session.user_id
        ):
            await request.app.state.accounts.members.leave(acting)
    except AgentError as err:
        return await _account_page(request, session, error=err)
    response = see_other(f"{LOGIN_PATH}?signed_out=1")
    end_session(response, request.app.state.services.settings)
    return response
