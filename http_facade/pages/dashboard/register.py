"""Registration pages: the form of ``POST /register`` and the page the link in the mail opens.

The link (``links.VERIFY_PAGE``) opens a page that only looks at the token (``link_state``); its
button posts the token, which is what uses it up (``Registrations.verify``, as ``POST
/register/verify``), so a mail scanner that fetches the link changes nothing. Passkey registration
runs in the browser against the JSON routes (``js/dashboard/passkey-register.js``).
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import Form, Query, Request
from fastapi.responses import HTMLResponse, Response
from pydantic import EmailStr, Field

from agent_server.accounts.links import VERIFY_PAGE
from agent_server.accounts.registration import Application
from agent_server.foundation.errors import Conflict, ValidationFailed
from agent_server.gateway.plans import self_serve_plans
from http_facade.deps import client_ip, page_origin
from http_facade.pages.dashboard.audit_trail import record
from http_facade.pages.dashboard.passkey_place import passkey_place
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
REGISTER_PAGE = f"{APP_PATH}/register"


class RegisterForm(DashboardForm):
    email: EmailStr
    organisation: str = Field(min_length=2, max_length=200)
    plan: str = Field(min_length=1, max_length=40)
    method: Literal["password", "passkey"] = "password"
    password: str = Field(default="", max_length=4096)


class VerifyForm(DashboardForm):
    token: str = Field(min_length=1, max_length=200)
    organisation: str = Field(default="", max_length=200)


async def _register_page(request: Request, form: FormState | None = None) -> HTMLResponse:
    accounts = request.app.state.accounts
    plans = self_serve_plans(request.app.state.services.knowledge.pack.plans)
    form = (form or FormState.blank(method="password", plan=plans[0].id)).at("register")
    context = {
        "plans": plans,
        "form": form,
        "link_minutes": accounts.settings.registration_link_ttl_seconds // 60,
        **passkey_place(request),
    }
    return page(request, "register.html", context, status=form.status)


@router.get(REGISTER_PAGE, summary="Dashboard: register an organisation (password or passkey)")
async def register_page(request: Request) -> HTMLResponse:
    return await _register_page(request)


@router.post(
    REGISTER_PAGE,
    summary="Dashboard: register with a password; a link is mailed to confirm",
    responses=responses(429),
)
@redisplays(_register_page)
async def register(request: Request, form: Annotated[RegisterForm, Form()]) -> HTMLResponse:
    checked(request, form)
    if form.method == "passkey":  # the passkey is made by the browser: the module posts JSON instead
        raise ValidationFailed(
            "Creating a passkey needs JavaScript; turn it on, or choose a password.", param="method"
        )
    application = Application(str(form.email), form.organisation, form.plan, form.password)
    registrations = request.app.state.accounts.registrations
    answer = await registrations.register(application, client_ip(request), page_origin(request))
    return page(request, "register_sent.html", {"answer": answer})


async def _verify_page(
    request: Request, token: str, state: str, form: FormState | None = None
) -> HTMLResponse:
    form = (form or FormState.blank()).at("verify")
    context = {"token": token, "state": state, "form": form}
    return page(request, "verify.html", context, status=form.status)


async def _verify_again(request: Request, form: FormState) -> HTMLResponse:
    """The link's page after its confirmation was refused: a taken name asks for another one."""
    token = form.value("token")
    if isinstance(form.problem, Conflict):
        state = "taken"
    else:
        state = await request.app.state.accounts.registrations.link_state(token) if token else "invalid"
    return await _verify_page(request, token, state, form)


@router.get(VERIFY_PAGE, summary="Dashboard: the registration link's page (uses nothing up)")
async def verify_page(request: Request, token: Annotated[str, Query(max_length=200)] = "") -> HTMLResponse:
    state = await request.app.state.accounts.registrations.link_state(token) if token else "invalid"
    return await _verify_page(request, token, state)


@router.post(
    VERIFY_PAGE,
    summary="Dashboard: use the registration link: the organisation is created and you are signed in",
    responses=responses(409),
)
@redisplays(_verify_again)
async def verify(request: Request, form: Annotated[VerifyForm, Form()]) -> Response:
    checked(request, form)
    registrations = request.app.state.accounts.registrations
    verified = await registrations.verify(form.token, form.organisation.strip() or None)
    signed_in = verified.signed_in
    await record(
        request, actor=signed_in.user_id, tenant_id=signed_in.tenant_id, action="auth.registration_verified"
    )
    response = see_other(f"{APP_PATH}?welcome=1")
    settings = request.app.state.services.settings
    start_session(response, settings, signed_in.access_token, signed_in.expires_in)
    return response
