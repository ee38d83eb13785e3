"""Auth dependencies of the tenant gateway: API keys on /v1, admin JWTs on /admin.

Credentials are read straight from the ASGI scope's raw headers (no ``Headers`` object per request).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated

from fastapi import Depends, Request

from agent_server.gateway.service import Caller, Gateway
from agent_server.gateway.tokens import AdminClaims
from http_facade.role_policy import authorize


def get_gateway(request: Request) -> Gateway:
    return request.app.state.gateway


def _bearer(value: bytes) -> str | None:
    scheme, _, credentials = value.decode("latin-1").partition(" ")
    return (credentials.strip() or None) if scheme.lower() == "bearer" else None


def api_key_of(request: Request) -> str | None:
    """``Authorization: Bearer <key>`` wins over ``X-API-Key: <key>`` when both are sent."""
    fallback = None
    for name, value in request.scope["headers"]:
        if name == b"authorization":
            return _bearer(value)
        if name == b"x-api-key":
            fallback = value.decode("latin-1").strip() or None
    return fallback


def bearer_token(request: Request) -> str | None:
    for name, value in request.scope["headers"]:
        if name == b"authorization":
            return _bearer(value)
    return None


def api_key_caller(scope: str) -> Callable[[Request], Awaitable[Caller]]:
    """A dependency admitting a /v1 request whose key has ``scope`` (and counting it)."""

    async def admit(request: Request) -> Caller:
        return await request.app.state.gateway.admit(api_key_of(request), scope)

    return admit


async def admin_claims(request: Request) -> AdminClaims:
    """The verified JWT of a user the route policy lets call this route (http_facade/role_policy.py):
    401 without a valid token, 403 ``role_not_allowed`` for a role the route does not admit."""
    return await authorize(request, bearer_token(request))


async def user_claims(request: Request) -> AdminClaims:
    """The same check, for routes of one's own account (sign-out, password change: ``SELF``)."""
    return await authorize(request, bearer_token(request))


GatewayDep = Annotated[Gateway, Depends(get_gateway)]
ChatCaller = Annotated[Caller, Depends(api_key_caller("chat"))]
ModelsCaller = Annotated[Caller, Depends(api_key_caller("models"))]
AdminDep = Annotated[AdminClaims, Depends(admin_claims)]
UserDep = Annotated[AdminClaims, Depends(user_claims)]
