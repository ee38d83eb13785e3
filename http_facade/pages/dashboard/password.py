"""Forgotten passwords: the form of ``POST /admin/auth/password/forgot`` and the page of the reset
(or invitation) link, whose button posts the new password (``Credentials.reset``)."""

from __future__ import annotations

from typing import Annotated

from fastapi import BackgroundTasks, Form, Query, Request
from fastapi.responses import HTMLResponse, Response
from pydantic import EmailStr, Field

from agent_server.accounts.links import FORGOT_PAGE, RESET_PAGE
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
from http_facade.pages.form_state import FormState, redisplays

router = dashboard_router()


class ForgotForm(DashboardForm):
    email: EmailStr


class ResetForm(DashboardForm):
    token: str = Field(min_length=1, max_length=200)
    password: str = Field(max_length=4096)


async def _forgot_page(request: Request, form: FormState | None = None) -> HTMLResponse:
    form = (form or FormState.blank()).at("forgot")
    return page(request, "forgot.html", {"form": form}, status=form.status)


@router.get(FORGOT_PAGE, summary="Dashboard: ask for a password reset link")
async def forgot_page(request: Request) -> HTMLResponse:
    return await _forgot_page(request)


@router.post(FORGOT_PAGE, summary="Dashboard: mail a reset link (the same answer for every address)",
             responses=responses(429))  # fmt: skip
@redisplays(_forgot_page)
async def forgot(
    request: Request, form: Annotated[ForgotForm, Form()], background: BackgroundTasks
) -> HTMLResponse:
    checked(request, form)
    credentials = request.app.state.accounts.credentials
    answer = await credentials.forgot(str(form.email), client_ip(request))
    background.add_task(credentials.send_reset, str(form.email))  # after the answer, as the JSON route
    return page(request, "forgot_sent.html", {"answer": answer})


async def _reset_page(
    request: Request, token: str, state: str, form: FormState | None = None
) -> HTMLResponse:
    form = (form or FormState.blank()).at("reset")
    context = {"token": token, "state": state, "form": form}
    return page(request, "reset.html", context, status=form.status)


async def _reset_again(request: Request, form: FormState) -> HTMLResponse:
    token = form.value("token")
    state = await request.app.state.accounts.credentials.link_state(token) if token else "invalid"
    return await _reset_page(request, token, state, form)


@router.get(RESET_PAGE, summary="Dashboard: the reset or invitation link's page (uses nothing up)")
async def reset_page(request: Request, token: Annotated[str, Query(max_length=200)] = "") -> HTMLResponse:
    state = await request.app.state.accounts.credentials.link_state(token) if token else "invalid"
    return await _reset_page(request, token, state)


@router.post(RESET_PAGE, summary="Dashboard: set the new password and sign in (other sessions end)",
             responses=responses())  # fmt: skip
@redisplays(_reset_again)
async def reset(request: Request, form: Annotated[ResetForm, Form()]) -> Response:
    checked(request, form)
    credentials = request.app.state.accounts.credentials
    signed_in = await credentials.reset(form.token, form.password)
    await record(
        request, actor=signed_in.user_id, tenant_id=signed_in.tenant_id, action="auth.password_reset"
    )
    response = see_other(APP_PATH)
    settings = request.app.state.services.settings
    start_session(response, settings, signed_in.access_token, signed_in.expires_in)
    return response
