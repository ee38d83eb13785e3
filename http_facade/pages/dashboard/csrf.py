"""CSRF tokens of the dashboard's forms: a signed double-submit token bound to the session.

Every browser gets a nonce in an HttpOnly cookie; a form carries ``HMAC-SHA-256(key, nonce |
SHA-256(session cookie))`` in its ``csrf_token`` field. Another site can neither read the nonce nor
compute the HMAC, and a token issued to one session (or to the signed-out browser) is worthless once
the session changes. The key is derived from the JWT signing secret, so every process of a
deployment accepts the tokens of the others.

Hardening (docs/security.md, "Dashboard cookies"):

- the nonce is ours: a random part and its HMAC. A cookie value the service did not issue (planted by
  a sibling subdomain, say) is ignored and replaced, never used to sign or check a form;
- a new nonce is issued whenever the response starts or ends a session (sign-in, sign-out), so a
  nonce known before signing in is worthless after;
- where the public base URL is https the cookie is ``__Host-agentgate_csrf`` (``Secure``, ``Path=/``,
  no ``Domain``): browsers then refuse it from any other host, sibling subdomains included.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import Response

from agent_server.foundation.errors import PermissionDenied
from agent_server.foundation.settings import Settings
from agent_server.gateway.tokens import signing_secret
from http_facade.pages.dashboard.session import APP_PATH, SESSION_COOKIE, secure_cookies

CSRF_COOKIE = "agentgate_csrf"
HOST_CSRF_COOKIE = "__Host-agentgate_csrf"
FIELD = "csrf_token"
_KEY_STATE = "dashboard_csrf_key"
_NEW_NONCE = "dashboard_csrf_nonce"
_SIGNATURE_HEX = 32


def host_prefixed(settings: Settings) -> bool:
    return urlsplit(settings.public_base_url).scheme == "https"


def cookie_name(settings: Settings) -> str:
    return HOST_CSRF_COOKIE if host_prefixed(settings) else CSRF_COOKIE


def _key(request: Request) -> bytes:
    state = request.app.state
    key = getattr(state, _KEY_STATE, None)
    if key is None:  # once per app: the secret may live in a file of the data directory
        secret = signing_secret(request.app.state.services.settings)
        key = hmac.new(secret, b"agentgate dashboard csrf", hashlib.sha256).digest()
        setattr(state, _KEY_STATE, key)
    return key


def _signature(request: Request, random_part: str) -> str:
    return hmac.new(_key(request), f"nonce|{random_part}".encode(), hashlib.sha256).hexdigest()[
        :_SIGNATURE_HEX
    ]


def _new_nonce(request: Request) -> str:
    random_part = secrets.token_urlsafe(32)
    return f"{random_part}.{_signature(request, random_part)}"


def _issued_nonce(request: Request) -> str | None:
    """The browser's nonce cookie if the service issued it; None for a missing or foreign value."""
    value = request.cookies.get(cookie_name(request.app.state.services.settings), "")
    random_part, _, signature = value.partition(".")
    if (
        not random_part
        or len(value) > 200
        or not hmac.compare_digest(_signature(request, random_part), signature)
    ):
        return None
    return value


def _expected(request: Request, nonce: str) -> str:
    session = hashlib.sha256(request.cookies.get(SESSION_COOKIE, "").encode()).hexdigest()
    return hmac.new(_key(request), f"{nonce}|{session}".encode(), hashlib.sha256).hexdigest()


def csrf_token(request: Request) -> str:
    """The token for the forms of the page being rendered (a new nonce is set with the answer)."""
    nonce = _issued_nonce(request) or getattr(request.state, _NEW_NONCE, None)
    if nonce is None:
        nonce = _new_nonce(request)
        setattr(request.state, _NEW_NONCE, nonce)
    return _expected(request, nonce)


def _changes_session(response: Response) -> bool:
    return any(value.startswith(f"{SESSION_COOKIE}=") for value in response.headers.getlist("set-cookie"))


def set_nonce_cookie(request: Request, response: Response) -> None:
    """Send the nonce a page's tokens were made from when the browser had none (or a foreign one),
    and a fresh one whenever the response starts or ends a session."""
    nonce = getattr(request.state, _NEW_NONCE, None)
    if _changes_session(response):
        nonce = _new_nonce(request)
    if nonce is None:
        return
    settings = request.app.state.services.settings
    response.set_cookie(
        cookie_name(settings),
        nonce,
        path="/" if host_prefixed(settings) else APP_PATH,
        secure=host_prefixed(settings) or secure_cookies(settings),
        httponly=True,
        samesite="lax",
    )


def check_csrf(request: Request, submitted: str) -> None:
    """403 ``csrf_token_invalid`` unless ``submitted`` is this browser's token for this session."""
    nonce = _issued_nonce(request)
    if not nonce or not submitted or not hmac.compare_digest(_expected(request, nonce), submitted):
        raise PermissionDenied(
            "This form is out of date or was not sent from this site; reload the page and send it again.",
            code="csrf_token_invalid",
            param=FIELD,
        )
