"""The invitation link's page, ``/app/invitations/accept?token=…`` (``Invitations.describe``; its
forms: ``accept_new`` and ``accept_signed_in``, as ``POST /admin/auth/invitation``).

Opening the link uses nothing up (mail scanners fetch links). Then, by what the link says:

- a new address chooses a password and is signed in, with the invitation's role;
- an address with an account signs in first (a link to the sign-in page that comes back here), then
  accepts with one button, if it has no organisation;
- an organisation that enforces single sign-on: a button starts its provider's sign-in, which gives
  the invitation's role (``sso/provision.py``).
"""

from __future__ import annotations

from typing import Annotated
from urllib.parse import urlencode

from fastapi import Form, Query, Request
from fastapi.responses import HTMLResponse, Response
from pydantic import Field

from agent_server.accounts.links import INVITE_PAGE
from agent_server.foundation.errors import AgentError
from agent_server.gateway.tables import User
from http_facade.pages.dashboard.audit_trail import record
from http_facade.pages.dashboard.route import (
    DashboardForm,
    checked,
    dashboard_router,
    page,
    responses,
    see_other,
)
from http_facade.pages.dashboard.session import APP_PATH, LOGIN_PATH, optional_session, start_session

router = dashboard_router()


class AcceptForm(DashboardForm):
    token: str = Field(min_length=1, max_length=200)
    password: str = Field(default="", max_length=4096)


async def _accept_page(request: Request, token: str, error: AgentError | None = None) -> HTMLResponse:
    link = await request.app.state.accounts.invitations.describe(token)
    session = await optional_session(request)
    email = None
    if session is not None:
        async with request.app.state.services.db.session() as db:
            user = await db.get(User, session.user_id)
        email = user.email if user else None
    back = f"{INVITE_PAGE}?{urlencode({'token': token})}"
    context = {
        "token": token,
        "link": link,
        "signed_in_as": email,
        "sign_in_url": f"{LOGIN_PATH}?{urlencode({'next': back})}",
        "error": error,
    }
    status = error.http_status if error else 200
    return page(request, "invitation.html", context, session=session, status=status)


@router.get(INVITE_PAGE, summary="Dashboard: an invitation link's page (uses nothing up)")
async def accept_page(request: Request, token: Annotated[str, Query(max_length=200)] = "") -> HTMLResponse:
    return await _accept_page(request, token)


@router.post(
    INVITE_PAGE,
    summary="Dashboard: accept an invitation (a new account's password, or signed in) and sign in",
    responses=responses(401, 409),
)
async def accept(request: Request, form: Annotated[AcceptForm, Form()]) -> Response:
    checked(request, form)
    invitations = request.app.state.accounts.invitations
    session = await optional_session(request)
    try:
        if session is not None:
            signed_in = await invitations.accept_signed_in(form.token, session.claims)
        else:
            signed_in = await invitations.accept_new(form.token, form.password)
    except AgentError as err:
        return await _accept_page(request, form.token, err)
    await record(request, actor=signed_in.user_id, tenant_id=signed_in.tenant_id, action="invitation.accept")
    response = see_other(APP_PATH)
    start_session(response, request.app.state.services.settings, signed_in.access_token, signed_in.expires_in)
    return response
