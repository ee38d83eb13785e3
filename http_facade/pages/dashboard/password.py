"""Forgotten passwords: the form of ``POST /admin/auth/password/forgot`` and the page of the reset
(or invitation) link, whose button posts the new password (``Credentials.reset``)."""

from __future__ import annotations

from typing import Annotated

from fastapi import BackgroundTasks, Form, Query, Request
from fastapi.responses import HTMLResponse, Response
from pydantic import EmailStr, Field

from agent_server.accounts.links import FORGOT_PAGE, RESET_PAGE
from agent_server.errors import AgentError
from http_facade.deps import client_ip
from http_facade.pages.dashboard.audit_trail import record
from http_facade.pages.dashboard.route import (
    DashboardForm,
    checked,
    dashboard_router,
    page,
    responses,
    see_other,
)
from http_facade.pages.dashboard.session import APP_PATH, start_session

router = dashboard_router()


class ForgotForm(DashboardForm):
    email: EmailStr


class ResetForm(DashboardForm):
    token: str = Field(min_length=1, max_length=200)
    password: str = Field(max_length=4096)


@router.get(FORGOT_PAGE, summary="Dashboard: ask for a password reset link")
async def forgot_page(request: Request) -> HTMLResponse:
    return page(request, "forgot.html", {"error": None})


@router.post(FORGOT_PAGE, summary="Dashboard: mail a reset link (the same answer for every address)",
             responses=responses(429))  # fmt: skip
async def forgot(
    request: Request, form: Annotated[ForgotForm, Form()], background: BackgroundTasks
) -> HTMLResponse:
    checked(request, form)
    credentials = request.app.state.accounts.credentials
    try:
        answer = await credentials.forgot(str(form.email), client_ip(request))
    except AgentError as err:
        return page(request, "forgot.html", {"error": err}, status=err.http_status)
    background.add_task(credentials.send_reset, str(form.email))  # after the answer, as the JSON route
    return page(request, "forgot_sent.html", {"answer": answer})


def _reset_page(request: Request, token: str, state: str, error: AgentError | None = None) -> HTMLResponse:
    context = {"token": token, "state": state, "error": error}
    return page(request, "reset.html", context, status=error.http_status if error else 200)


@router.get(RESET_PAGE, summary="Dashboard: the reset or invitation link's page (uses nothing up)")
async def reset_page(request: Request, token: Annotated[str, Query(max_length=200)] = "") -> HTMLResponse:
    state = await request.app.state.accounts.credentials.link_state(token) if token else "invalid"
    return _reset_page(request, token, state)


@router.post(RESET_PAGE, summary="Dashboard: set the new password and sign in (other sessions end)",
             responses=responses())  # fmt: skip
async def reset(request: Request, form: Annotated[ResetForm, Form()]) -> Response:
    checked(request, form)
    credentials = request.app.state.accounts.credentials
    try:
        signed_in = await credentials.reset(form.token, form.password)
    except AgentError as err:
        state = await credentials.link_state(form.token)
        return _reset_page(request, form.token, state, err)
    await record(
        request, actor=signed_in.user_id, tenant_id=signed_in.tenant_id, action="auth.password_reset"
    )
    response = see_other(APP_PATH)
    settings = request.app.state.services.settings
    start_session(response, settings, signed_in.access_token, signed_in.expires_in)
    return response
