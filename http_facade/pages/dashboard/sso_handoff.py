"""Single sign-on started from the dashboard finishes in a dashboard session, not a JSON answer.

The sign-in page's SSO form sets a random *binding* in a cookie of this browser and starts the
provider's flow with a *marker*, ``app:`` + the binding's digest: as the SAML RelayState (which the
ACS checks against the request it sent) or, for OpenID Connect, a ``dashboard`` parameter of the
start URL that the start route keeps in a cookie next to its own browser binding. When the callback
or the ACS sees a marker, it parks the new session (encrypted, for a minute, usable once) under a
random ticket and redirects to ``/app/login/sso/finish?ticket=…``. That page takes the ticket and
starts the session only in the browser holding the binding, so a response or callback URL replayed
into another browser signs nobody in there (login CSRF).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from urllib.parse import urlencode, urlsplit

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from agent_server.accounts.sessions import SignedIn
from agent_server.foundation.errors import ValidationFailed
from http_facade.pages.dashboard.session import APP_PATH, secure_cookies

MARKER_PREFIX = "app:"
FINISH_PATH = f"{APP_PATH}/login/sso/finish"
BINDING_COOKIE = "agentgate_sso_dashboard"  # the binding, on the dashboard's finish page only
MARKER_COOKIE = "agentgate_sso_oidc_dashboard"  # the marker, on the OIDC callback only
TICKET_PREFIX = "dashboard-sso:"
TICKET_TTL_SECONDS = 60
NO_STORE = {"Cache-Control": "no-store"}


def marker_of(binding: str) -> str:
    """``app:`` and 40 hex digits: 44 bytes, within the 80 bytes of a SAML RelayState."""
    return MARKER_PREFIX + hashlib.sha256(binding.encode()).hexdigest()[:40]


def is_marker(value: str | None) -> bool:
    return bool(value) and str(value).startswith(MARKER_PREFIX)


def new_binding() -> str:
    return secrets.token_urlsafe(32)


def marked_start_url(protocol: str, url: str, binding: str) -> str:
    """The provider's start URL carrying the marker of ``binding``."""
    parameter = "relay_state" if protocol == "saml" else "dashboard"
    separator = "&" if urlsplit(url).query else "?"
    return f"{url}{separator}{urlencode({parameter: marker_of(binding)})}"


def bind(request: Request, response: Response, binding: str) -> None:
    """Keep ``binding`` in this browser for the finish page (as long as a started sign-in lives)."""
    settings = request.app.state.services.settings
    response.set_cookie(
        BINDING_COOKIE,
        binding,
        max_age=settings.sso_state_ttl_seconds,
        path=FINISH_PATH,
        secure=secure_cookies(settings),
        httponly=True,
        samesite="lax",  # sent on the top-level redirect back from the provider
    )


def remember_marker(request: Request, response: Response, marker: str | None, path: str) -> None:
    """OIDC start: keep the dashboard's marker for the callback at ``path`` (or forget an old one)."""
    settings = request.app.state.services.settings
    if not is_marker(marker):
        response.delete_cookie(MARKER_COOKIE, path=path)
        return
    response.set_cookie(
        MARKER_COOKIE,
        str(marker),
        max_age=settings.sso_state_ttl_seconds,
        path=path,
        secure=secure_cookies(settings),
        httponly=True,
        samesite="lax",
    )


def _ticket_key(ticket: str) -> str:
    return TICKET_PREFIX + hashlib.sha256(ticket.encode()).hexdigest()


async def hand_off(request: Request, signed_in: SignedIn, marker: str) -> RedirectResponse:
    """Park the session for the browser holding the marker's binding; redirect it to the finish page."""
    accounts = request.app.state.accounts
    ticket = secrets.token_urlsafe(32)
    parked = {"marker": marker, "token": accounts.box.encrypt(signed_in.access_token)}
    await accounts.kv.set(_ticket_key(ticket), json.dumps(parked).encode(), ttl=TICKET_TTL_SECONDS)
    return RedirectResponse(
        f"{FINISH_PATH}?{urlencode({'ticket': ticket})}", status_code=303, headers=NO_STORE
    )


def refused() -> ValidationFailed:
    return ValidationFailed(
        "This sign-in is unknown, expired, already used or was started in another browser; sign in again.",
        code="sso_state_invalid",
        param="ticket",
    )


async def take_session(request: Request, ticket: str) -> str:
    """The parked JWT for this browser (once), or 400 ``sso_state_invalid``."""
    accounts = request.app.state.accounts
    raw = await accounts.kv.take(_ticket_key(ticket))
    binding = request.cookies.get(BINDING_COOKIE)
    if raw is None or not binding:
        raise refused()
    parked = json.loads(raw)
    if not hmac.compare_digest(marker_of(binding), str(parked.get("marker", ""))):
        raise refused()
    return str(accounts.box.decrypt(parked["token"]))


def forget_binding(response: Response) -> None:
    response.delete_cookie(BINDING_COOKIE, path=FINISH_PATH)
