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
from agent_server.errors import AgentError, Conflict, ValidationFailed
from agent_server.gateway.plans import self_serve_plans
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


def _register_page(
    request: Request, form: RegisterForm | None = None, error: AgentError | None = None
) -> HTMLResponse:
    accounts = request.app.state.accounts
    context = {
        "plans": self_serve_plans(request.app.state.services.knowledge.pack.plans),
        "methods": accounts.registrations.methods,
        "form": form,
        "error": error,
        "link_minutes": accounts.settings.registration_link_ttl_seconds // 60,
    }
    return page(request, "register.html", context, status=error.http_status if error else 200)


@router.get(REGISTER_PAGE, summary="Dashboard: register an organisation (password or passkey)")
async def register_page(request: Request) -> HTMLResponse:
    return _register_page(request)


@router.post(
    REGISTER_PAGE,
    summary="Dashboard: register with a password; a link is mailed to confirm",
    responses=responses(429),
)
async def register(request: Request, form: Annotated[RegisterForm, Form()]) -> HTMLResponse:
    checked(request, form)
    try:
        if form.method == "passkey":  # the passkey is made by the browser: the module posts JSON instead
            raise ValidationFailed(
                "Creating a passkey needs JavaScript; turn it on, or choose a password.", param="method"
            )
        application = Application(str(form.email), form.organisation, form.plan, form.password)
        answer = await request.app.state.accounts.registrations.register(application, client_ip(request))
    except AgentError as err:
        return _register_page(request, form, err)
    return page(request, "register_sent.html", {"answer": answer})


def _verify_page(
    request: Request, token: str, state: str, error: AgentError | None = None, organisation: str = ""
) -> HTMLResponse:
    context = {"token": token, "state": state, "error": error, "organisation": organisation}
    return page(request, "verify.html", context, status=error.http_status if error else 200)


@router.get(VERIFY_PAGE, summary="Dashboard: the registration link's page (uses nothing up)")
async def verify_page(request: Request, token: Annotated[str, Query(max_length=200)] = "") -> HTMLResponse:
    state = await request.app.state.accounts.registrations.link_state(token) if token else "invalid"
    return _verify_page(request, token, state)


@router.post(
    VERIFY_PAGE,
    summary="Dashboard: use the registration link: the organisation is created and you are signed in",
    responses=responses(409),
)
async def verify(request: Request, form: Annotated[VerifyForm, Form()]) -> Response:
    checked(request, form)
    registrations = request.app.state.accounts.registrations
    try:
        verified = await registrations.verify(form.token, form.organisation.strip() or None)
    except AgentError as err:
        state = "taken" if isinstance(err, Conflict) else await registrations.link_state(form.token)
        return _verify_page(request, form.token, state, err, form.organisation)
    signed_in = verified.signed_in
    await record(
        request, actor=signed_in.user_id, tenant_id=signed_in.tenant_id, action="auth.registration_verified"
    )
    response = see_other(f"{APP_PATH}?welcome=1")
    settings = request.app.state.services.settings
    start_session(response, settings, signed_in.access_token, signed_in.expires_in)
    return response
