"""The dashboard's session: an HttpOnly cookie holding the admin JWT of the signed-in user.

The JSON API never reads this cookie (it takes ``Authorization: Bearer`` only), so a page of another
site cannot use it there; under ``/app`` every state-changing form also carries a CSRF token
(``csrf.py``). The cookie is checked like a bearer token on every request (the signature, the expiry
and the user's token version), so signing out anywhere ends it at once; then the route policy
(``http_facade/role_policy.py``) decides whether the member's role may open the page.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlencode

from sqlmodel import col, select
from starlette.requests import Request
from starlette.responses import Response

from agent_server.accounts.transport import plain_http_loopback
from agent_server.foundation.errors import AuthFailed, PermissionDenied
from agent_server.foundation.settings import Settings
from agent_server.gateway.tables import Tenant, User
from agent_server.gateway.tokens import AdminClaims
from http_facade.role_policy import authorize

APP_PATH = "/app"
LOGIN_PATH = f"{APP_PATH}/login"
SESSION_COOKIE = "agentgate_session"
PLATFORM_ADMIN = "platform:admin"


class SignInNeeded(Exception):
    """No live session: the dashboard answers with a redirect to the sign-in page."""

    def __init__(self, next_path: str) -> None:
        super().__init__(next_path)
        self.next_path = next_path


class ElsewhereFirst(Exception):
    """The overview is not for this session's role: the dashboard sends it to its first page."""

    def __init__(self, claims: AdminClaims) -> None:
        super().__init__(claims.user_id)
        self.claims = claims


@dataclass(frozen=True, slots=True)
class Session:
    token: str
    claims: AdminClaims
    email: str = ""  # who is signed in and where, for the header of every page
    organisation: str = ""

    @property
    def user_id(self) -> str:
        return self.claims.user_id

    @property
    def tenant_id(self) -> str:
        return self.claims.tenant_id

    @property
    def platform(self) -> bool:
        return PLATFORM_ADMIN in self.claims.permissions

    @property
    def role(self) -> str | None:
        """The member's role now; None without one (or without an organisation)."""
        return self.claims.role if self.claims.tenant_id else None


def secure_cookies(settings: Settings) -> bool:
    """Cookies are ``Secure`` in production always; in sandbox mode, unless the service is reached
    over plain http on loopback (``make run``). Production with a plain-http base URL on another host
    does not start (agent_server/accounts/transport.py)."""
    return not (settings.sandbox and plain_http_loopback(settings))


def safe_next(value: str | None) -> str:
    """A dashboard path to go to after signing in; anything else (another site, ``//host``) is /app."""
    if not value or "\\" in value or any(ord(c) < 0x21 for c in value):
        return APP_PATH
    if value.startswith(LOGIN_PATH):  # never back to the sign-in page itself (a loop when signed in)
        return APP_PATH
    if value == APP_PATH or value.startswith((APP_PATH + "/", APP_PATH + "?")):
        return value
    return APP_PATH


def login_url(next_path: str) -> str:
    return LOGIN_PATH if next_path == APP_PATH else f"{LOGIN_PATH}?{urlencode({'next': next_path})}"


def start_session(response: Response, settings: Settings, token: str, lifetime: int) -> None:
    """Hand the browser its session cookie: the JWT, for as long as the JWT lives (``lifetime`` s)."""
    response.set_cookie(
        SESSION_COOKIE,
        token,
        max_age=max(lifetime, 0),
        path=APP_PATH,
        secure=secure_cookies(settings),
        httponly=True,
        samesite="lax",
    )


def end_session(response: Response, settings: Settings) -> None:
    response.delete_cookie(
        SESSION_COOKIE, path=APP_PATH, secure=secure_cookies(settings), httponly=True, samesite="lax"
    )


def _return_path(request: Request) -> str:
    """Where to come back after signing in: this page for a GET, the overview after a form."""
    if request.method != "GET":
        return APP_PATH
    query = f"?{request.url.query}" if request.url.query else ""
    return safe_next(request.url.path + query)


async def current_session(request: Request) -> Session:
    """The signed-in member of this request; ``SignInNeeded`` without a live session.

    A role the route policy does not admit gets 403 ``role_not_allowed``, as on ``/admin``; the
    overview sends such a session to the first page its role may open instead.
    """
    token = request.cookies.get(SESSION_COOKIE)
    if not token:
        raise SignInNeeded(_return_path(request))
    try:
        claims = await authorize(request, token)
    except AuthFailed:  # expired, signed out since, or not a token of ours
        raise SignInNeeded(_return_path(request)) from None
    except PermissionDenied:
        if request.method == "GET" and request.url.path == APP_PATH:
            raise ElsewhereFirst(await request.app.state.gateway.authenticate_user(token)) from None
        raise
    email, organisation = await _who(request, claims)
    return Session(token, claims, email, organisation)


async def optional_session(request: Request) -> Session | None:
    """The live session of this browser if there is one, for public pages that adapt to it."""
    token = request.cookies.get(SESSION_COOKIE)
    if not token:
        return None
    try:
        claims = await request.app.state.gateway.authenticate_user(token)
    except AuthFailed:
        return None
    email, organisation = await _who(request, claims)
    return Session(token, claims, email, organisation)


async def _who(request: Request, claims: AdminClaims) -> tuple[str, str]:
    """The signed-in person's e-mail and organisation name (one primary-key join)."""
    query = (
        select(User.email, Tenant.name)
        .outerjoin(Tenant, col(Tenant.id) == col(User.tenant_id))  # a person may have left every organisation
        .where(col(User.id) == claims.user_id)
    )
    async with request.app.state.gateway.db.session() as session:
        row = (await session.execute(query)).first()
    return (row[0], row[1] or "") if row else ("", "")
