"""Signing in and out of the dashboard: password, passkey, single sign-on; sign-out.

Each form calls what its JSON twin calls: ``Gateway.login`` (``POST /admin/auth/login``), the SSO
discovery (``POST /sso/discover``), ``Credentials.sign_out`` (``POST /admin/auth/logout``). Passkey
sign-in runs in the browser against the JSON routes (``js/dashboard/passkey-login.js``) and hands
the JWT it gets to ``POST /app/session``, which turns it into the session cookie.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import Field

from agent_server.accounts.sso.discovery import DISCOVERIES_PER_IP, discover
from agent_server.admin.audit import LOGIN_FAILED
from agent_server.foundation.errors import AgentError, AuthFailed
from agent_server.gateway import repository as repo
from http_facade.deps import client_ip
from http_facade.pages.dashboard import sso_handoff
from http_facade.pages.dashboard.audit_trail import record
from http_facade.pages.dashboard.passkey_place import passkey_place
from http_facade.pages.dashboard.route import (
    DashboardForm,
    SessionDep,
    checked,
    dashboard_router,
    page,
    responses,
    see_other,
)
from http_facade.pages.dashboard.session import (
    APP_PATH,
    LOGIN_PATH,
    SignInNeeded,
    current_session,
    end_session,
    safe_next,
    start_session,
)
from http_facade.pages.form_state import FormState, redisplays, sent_form

router = dashboard_router()
Email = Annotated[str, Field(min_length=3, max_length=320)]
Next = Annotated[str, Field(default=APP_PATH, max_length=2048)]


class LoginForm(DashboardForm):
    email: Email
    password: str = Field(min_length=1, max_length=1024)
    next: Next = APP_PATH


class SessionForm(DashboardForm):
    token: str = Field(min_length=1, max_length=4096, description="The admin JWT of a passkey sign-in.")
    next: Next = APP_PATH


class SsoForm(DashboardForm):
    email: Email
    next: Next = APP_PATH


async def _login_page(
    request: Request,
    next_path: str,
    *,
    form: FormState | None = None,
    signed_out: bool = False,
) -> HTMLResponse:
    """The sign-in page; ``form`` is the password form (prefix ``login``) or the SSO form (``sso``)
    as it was sent, shown again with its problem."""
    sent = form or FormState.blank()
    context = {
        "next": safe_next(next_path),
        "login_form": sent if sent.prefix != "sso" else FormState.blank(),
        "sso_form": sent if sent.prefix == "sso" else FormState.blank(),
        "signed_out": signed_out,
        **passkey_place(request),
    }
    for state, prefix in ((context["login_form"], "login"), (context["sso_form"], "sso")):
        state.at(state.prefix or prefix)
    return page(request, "login.html", context, status=sent.status)


async def _login_again(request: Request, form: FormState) -> HTMLResponse:
    return await _login_page(request, form.value("next", APP_PATH), form=form.at("login"))


async def _sso_again(request: Request, form: FormState) -> HTMLResponse:
    return await _login_page(request, form.value("next", APP_PATH), form=form.at("sso"))


async def _signed_in(request: Request) -> bool:
    try:
        await current_session(request)
    except (SignInNeeded, AgentError):
        return False
    return True


@router.get(LOGIN_PATH, summary="Dashboard: sign in (password, passkey or single sign-on)")
async def login_page(
    request: Request,
    next_path: Annotated[str, Query(alias="next", max_length=2048)] = APP_PATH,
    signed_out: bool = False,
    reauth: bool = False,
) -> Response:
    if not reauth and await _signed_in(request):  # reauth: a fresh sign-in, e.g. to add a passkey
        return see_other(safe_next(next_path))
    return await _login_page(request, next_path, signed_out=signed_out)


@router.post(
    LOGIN_PATH,
    summary="Dashboard: sign in with e-mail and password",
    responses=responses(401, 429),
)
@redisplays(_login_again)
async def login(request: Request, form: Annotated[LoginForm, Form()]) -> Response:
    checked(request, form)
    gateway = request.app.state.gateway
    email = form.email.strip().lower()
    try:
        signed_in = await gateway.login(form.email, form.password, client=client_ip(request))
    except AgentError as err:  # recorded under the account's tenant, as the audit middleware does
        user = await repo.find_user(gateway.db, email) if "@" in email else None
        tenant = user.tenant_id if user else None
        await record(request, actor=email, tenant_id=tenant, action=LOGIN_FAILED, status=err.http_status)
        return await _login_again(request, FormState.sent(await sent_form(request), err))
    await record(request, actor=email, tenant_id=signed_in.tenant_id, action="auth.login")
    response = see_other(safe_next(form.next))
    start_session(response, gateway.services.settings, signed_in.access_token, signed_in.expires_in)
    return response


@router.post(
    f"{APP_PATH}/session",
    summary="Dashboard: start the session of a passkey sign-in (the JWT of POST /admin/auth/passkey)",
    responses=responses(401, 403),
)
async def passkey_session(request: Request, form: Annotated[SessionForm, Form()]) -> RedirectResponse:
    checked(request, form)
    gateway = request.app.state.gateway
    claims = await gateway.authenticate_user(form.token)  # 401 for anything but a live session
    lifetime = int(claims.issued_at + gateway.tokens.ttl - gateway.clock.now())
    response = see_other(safe_next(form.next))
    start_session(response, gateway.services.settings, form.token, lifetime)
    return response


@router.post(
    f"{LOGIN_PATH}/sso",
    summary="Dashboard: single sign-on: find the organisation's identity provider and go there",
    responses=responses(404, 429),
)
@redisplays(_sso_again)
async def sso_start(request: Request, form: Annotated[SsoForm, Form()]) -> Response:
    checked(request, form)
    accounts = request.app.state.accounts
    await accounts.limiter.enforce(DISCOVERIES_PER_IP, client_ip(request))  # the limit of /sso/discover
    base_url = request.app.state.services.settings.public_base_url
    found = await discover(accounts.db, request.app.state.gateway.catalog, base_url, form.email)
    binding = sso_handoff.new_binding()
    response = see_other(sso_handoff.marked_start_url(found["protocol"], found["start_url"], binding))
    sso_handoff.bind(request, response, binding)
    return response


@router.get(
    sso_handoff.FINISH_PATH,
    summary="Dashboard: finish a single sign-on started here (the ticket of the callback or ACS)",
    responses=responses(401),
)
async def sso_finish(
    request: Request, ticket: Annotated[str, Query(min_length=1, max_length=100)]
) -> RedirectResponse:
    token = await sso_handoff.take_session(request, ticket)
    gateway = request.app.state.gateway
    try:
        claims = await gateway.authenticate_user(token)
    except AuthFailed:
        raise sso_handoff.refused() from None
    response = see_other(APP_PATH)
    lifetime = int(claims.issued_at + gateway.tokens.ttl - gateway.clock.now())
    start_session(response, gateway.services.settings, token, lifetime)
    sso_handoff.forget_binding(response)
    return response


@router.post(f"{APP_PATH}/logout", summary="Dashboard: sign out (ends every session of the user)")
async def logout(
    request: Request, form: Annotated[DashboardForm, Form()], session: SessionDep
) -> RedirectResponse:
    checked(request, form)
    await request.app.state.accounts.credentials.sign_out(session.user_id)
    await record(request, actor=session.user_id, tenant_id=session.tenant_id, action="auth.logout")
    response = see_other(f"{LOGIN_PATH}?signed_out=1")
    end_session(response, request.app.state.services.settings)
    return response
