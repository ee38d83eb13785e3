"""The OAuth 2.1 endpoints (docs/oauth.md): the authorization endpoint hands the request to the
dashboard's consent page, where the person signs in and decides; token, registration (RFC 7591) and
revocation (RFC 7009) answer in OAuth's own JSON (``error``, ``error_description``), as its clients
expect."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response

from agent_server.errors import ValidationFailed
from agent_server.oauth.service import Answer, OAuthError, OAuthService
from agent_server.ratelimit import Policy
from http_facade.deps import client_ip
from wellknown import oauth

router = APIRouter(tags=["auth"])
CONSENT_PAGE = "/app/oauth/consent"
REGISTER_PER_IP = Policy("oauth-register", 20, 3600)
NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}


def service(request: Request) -> OAuthService:
    return request.app.state.oauth


def answer(result: Answer) -> Response:
    status, body, headers = result
    merged = {**dict(headers), **NO_STORE}
    if status in (301, 302, 303) and "Location" in merged:
        return RedirectResponse(merged["Location"], status_code=302, headers=NO_STORE)
    merged.pop("Content-Type", None)
    return JSONResponse(body, status_code=status, headers=merged)


@router.get(oauth.AUTHORIZE_PATH, summary="OAuth authorization endpoint: on to the consent page")
async def authorize(request: Request) -> Response:
    query = list(request.query_params.multi_items())
    try:
        await service(request).consent_request(str(request.url), request.headers, query)
    except OAuthError as refused:
        return answer(refused.answer)  # back to the client when its redirect URI is known
    return RedirectResponse(f"{CONSENT_PAGE}?{request.url.query}", status_code=303)


async def _form(request: Request) -> list[tuple[str, str]]:
    if not request.headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
        raise ValidationFailed(
            "Send the parameters as application/x-www-form-urlencoded.", code="invalid_content_type"
        )
    form = await request.form()
    return [(name, value) for name, value in form.multi_items() if isinstance(value, str)]


@router.post(oauth.TOKEN_PATH, summary="OAuth token endpoint: authorization code (PKCE S256) and refresh")
async def token(request: Request) -> Response:
    return answer(await service(request).token(str(request.url), request.headers, await _form(request)))


@router.post(oauth.INTROSPECT_PATH, summary="OAuth token introspection (RFC 7662), for confidential clients")
async def introspect(request: Request) -> Response:
    return answer(await service(request).introspect(str(request.url), request.headers, await _form(request)))


@router.post(oauth.REVOKE_PATH, summary="OAuth token revocation (RFC 7009)")
async def revoke(request: Request) -> Response:
    return answer(await service(request).revoke(str(request.url), request.headers, await _form(request)))


@router.post(
    oauth.CLIENT_REGISTRATION_PATH, status_code=201, summary="OAuth dynamic client registration (RFC 7591)"
)
async def register(request: Request) -> Response:
    await request.app.state.accounts.limiter.enforce(REGISTER_PER_IP, client_ip(request))
    try:
        data: Any = await request.json()
    except ValueError:
        raise ValidationFailed("The body is not JSON.", code="invalid_json") from None
    if not isinstance(data, dict):
        data = {}
    return answer(await service(request).register(str(request.url), request.headers, data))
