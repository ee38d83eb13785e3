"""Single sign-on for people: discovery by e-mail, and OpenID Connect sign-in (start and callback).

``POST /sso/discover`` serves every protocol (it points to the SAML start when that is the tenant's
only enabled connection). The callback answers the admin session as JSON, like the password login; it must come from the
browser that opened the start URL (a cookie binds the two). A sign-in started from the dashboard
(``?dashboard=``) finishes into its session instead (http_facade/pages/dashboard/sso_handoff.py).
The logic is in agent_server/accounts/sso/ (docs/accounts.md, "Single sign-on").
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request, Response
from fastapi.responses import RedirectResponse
from pydantic import BaseModel, ConfigDict, Field

from agent_server.accounts.sso.discovery import DISCOVERIES_PER_IP, discover
from agent_server.accounts.sso.oidc import BROWSER_COOKIE, CALLBACK_PATH
from agent_server.accounts.sso.service import sso_of
from http_facade.deps import client_ip
from http_facade.pages.dashboard import sso_handoff

router = APIRouter(tags=["single sign-on"])

Param = Annotated[str | None, Query(max_length=2048)]


class DiscoverBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    email: str = Field(min_length=3, max_length=320, pattern=r"^[^@\s]+@[^@\s]+$")


class Discovered(BaseModel):
    protocol: str = Field(description="oidc or saml")
    tenant_id: str
    start_url: str = Field(description="Open it in the browser to sign in.")


class SignedInBody(BaseModel):
    access_token: str
    token_type: str = "bearer"
    expires_in: int
    user_id: str
    tenant_id: str


@router.post("/sso/discover", summary="Which identity provider signs in this e-mail address")
async def sso_discover(body: DiscoverBody, request: Request) -> Discovered:
    accounts = request.app.state.accounts
    await accounts.limiter.enforce(DISCOVERIES_PER_IP, client_ip(request))
    base_url = request.app.state.services.settings.public_base_url
    catalog = request.app.state.gateway.catalog
    return Discovered(**await discover(accounts.db, catalog, base_url, body.email))


@router.get(
    "/sso/oidc/{tenant_id}/start",
    status_code=302,
    response_class=RedirectResponse,
    summary="Start OpenID Connect sign-in: redirects to the organisation's identity provider",
)
async def oidc_start(
    tenant_id: Annotated[str, Path(min_length=1, max_length=40)],
    request: Request,
    dashboard: Annotated[
        str | None, Query(max_length=80, description="Set by the dashboard: finish into its session.")
    ] = None,
) -> Any:
    oidc = sso_of(request.app.state.accounts).oidc
    started = await oidc.start(tenant_id, client_ip(request))
    response = RedirectResponse(
        started.authorization_url, status_code=302, headers={"Cache-Control": "no-store"}
    )
    response.set_cookie(
        BROWSER_COOKIE,
        started.browser_binding,
        max_age=oidc.state_ttl,
        path=CALLBACK_PATH,
        secure=oidc.redirect_uri.startswith("https:"),
        httponly=True,
        samesite="lax",  # sent on the provider's top-level redirect back, not on cross-site subrequests
    )
    sso_handoff.remember_marker(request, response, dashboard, CALLBACK_PATH)  # started from /app/login
    return response


@router.get(
    CALLBACK_PATH,
    summary="OpenID Connect redirect URI: answers an admin session for the signed-in user",
    response_model=SignedInBody,
)
async def oidc_callback(
    request: Request,
    response: Response,
    code: Param = None,
    state: Param = None,
    error: Annotated[str | None, Query(max_length=200)] = None,
    error_description: Param = None,
    iss: Param = None,
) -> Any:
    signed_in = await sso_of(request.app.state.accounts).oidc.finish(
        state=state,
        code=code,
        browser_binding=request.cookies.get(BROWSER_COOKIE),
        error=error,
        error_description=error_description,
        iss=iss,
    )
    marker = request.cookies.get(sso_handoff.MARKER_COOKIE)
    if sso_handoff.is_marker(marker):  # started from the dashboard: finish into its session
        redirect = await sso_handoff.hand_off(request, signed_in, str(marker))
        redirect.delete_cookie(sso_handoff.MARKER_COOKIE, path=CALLBACK_PATH)
        redirect.delete_cookie(BROWSER_COOKIE, path=CALLBACK_PATH)
        return redirect
    response.headers["Cache-Control"] = "no-store"  # the body is a bearer token
    response.delete_cookie(BROWSER_COOKIE, path=CALLBACK_PATH)
    return SignedInBody(**signed_in.body())
