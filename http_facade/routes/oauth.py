"""The OAuth 2.1 endpoints (docs/oauth.md): the authorization endpoint hands the request to the
dashboard's consent page, where the person signs in and decides; token, registration (RFC 7591) and
revocation (RFC 7009) answer in OAuth's own JSON (``error``, ``error_description``), as its clients
expect."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response
from pydantic import BaseModel

from agent_server.oauth.service import OAuthService
from agent_server.oauth.vocabulary import Answer, OAuthError
from agent_server.policies.ratelimit import Policy
from http_facade.deps import client_ip
from wellknown import oauth

router = APIRouter(tags=["auth"])
CONSENT_PAGE = "/app/oauth/consent"
REGISTER_PER_IP = Policy("oauth-register", 20, 3600)
NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}


class OAuthErrorBody(BaseModel):
    """OAuth's own error answer (RFC 6749 section 5.2), which its clients read."""

    error: str
    error_description: str | None = None


def _oauth_or_site(description: str) -> dict[str, Any]:
    """OAuth's error shape, or the site envelope of a refusal made before the route (a bad
    ``API-Version``, a body over the limit)."""
    oauth_error = OAuthErrorBody.model_json_schema()
    site_error = {"$ref": "#/components/schemas/SiteError"}
    return {
        "description": description,
        "content": {"application/json": {"schema": {"anyOf": [oauth_error, site_error]}}},
    }


ERRORS: dict[int | str, dict[str, Any]] = {
    400: _oauth_or_site("An OAuth error (invalid_request, invalid_grant, …)."),
    401: _oauth_or_site("The client did not authenticate (invalid_client)."),
}
REDIRECTS: dict[int | str, dict[str, Any]] = {
    302: {"description": "Back to the client's redirect URI with an error."},
    303: {"description": "On to the consent page."},
}


def refused(description: str) -> JSONResponse:
    return JSONResponse({"error": "invalid_request", "error_description": description}, 400, headers=NO_STORE)


def service(request: Request) -> OAuthService:
    return request.app.state.oauth


def answer(result: Answer) -> Response:
    status, body, headers = result
    merged = {**dict(headers), **NO_STORE}
    if status in (301, 302, 303) and "Location" in merged:
        return RedirectResponse(merged["Location"], status_code=302, headers=NO_STORE)
    merged.pop("Content-Type", None)
    return JSONResponse(body, status_code=status, headers=merged)


@router.get(
    oauth.AUTHORIZE_PATH,
    summary="OAuth authorization endpoint: on to the consent page",
    responses={**REDIRECTS, **ERRORS},
)
async def authorize(request: Request) -> Response:
    query = list(request.query_params.multi_items())
    try:
        await service(request).consent_request(str(request.url), request.headers, query)
    except OAuthError as refused:
        return answer(refused.answer)  # back to the client when its redirect URI is known
    return RedirectResponse(f"{CONSENT_PAGE}?{request.url.query}", status_code=303)


NOT_A_FORM = "Send the parameters as application/x-www-form-urlencoded."


async def _form(request: Request) -> list[tuple[str, str]] | None:
    """The form's fields; None when the body is no URL-encoded form (OAuth's endpoints take one)."""
    if not request.headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
        return None
    form = await request.form()
    return [(name, value) for name, value in form.multi_items() if isinstance(value, str)]


@router.post(
    oauth.TOKEN_PATH,
    summary="OAuth token endpoint: authorization code (PKCE S256), refresh, JWT-bearer (an ID-JAG)",
    responses=ERRORS,
)
async def token(request: Request) -> Response:
    form = await _form(request)
    if form is None:
        return refused(NOT_A_FORM)
    return answer(await service(request).token(str(request.url), request.headers, form))


@router.post(
    oauth.INTROSPECT_PATH,
    summary="OAuth token introspection (RFC 7662), for confidential clients",
    responses=ERRORS,
)
async def introspect(request: Request) -> Response:
    form = await _form(request)
    if form is None:
        return refused(NOT_A_FORM)
    return answer(await service(request).introspect(str(request.url), request.headers, form))


@router.post(oauth.REVOKE_PATH, summary="OAuth token revocation (RFC 7009)", responses=ERRORS)
async def revoke(request: Request) -> Response:
    form = await _form(request)
    if form is None:
        return refused(NOT_A_FORM)
    return answer(await service(request).revoke(str(request.url), request.headers, form))


@router.post(
    oauth.CLIENT_REGISTRATION_PATH,
    status_code=201,
    summary="OAuth dynamic client registration (RFC 7591)",
    responses={400: _oauth_or_site("invalid_client_metadata, invalid_request.")},
)
async def register(request: Request) -> Response:
    await request.app.state.accounts.limiter.enforce(REGISTER_PER_IP, client_ip(request))
    try:
        data: Any = await request.json()
    except ValueError:
        return refused("The body is not JSON.")
    if not isinstance(data, dict):
        data = {}
    return answer(await service(request).register(str(request.url), request.headers, data))
