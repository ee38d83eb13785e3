"""CSRF tokens of the dashboard's forms: a signed double-submit token bound to the session.

Every browser gets a random nonce in an HttpOnly cookie (``agentgate_csrf``); a form carries
``HMAC-SHA-256(key, nonce | SHA-256(session cookie))`` in its ``csrf_token`` field. Another site can
neither read the nonce nor compute the HMAC, and a token issued to one session (or to the signed-out
browser) is worthless once the session changes. The key is derived from the JWT signing secret,
so every process of a deployment accepts the tokens of the others.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

from starlette.requests import Request
from starlette.responses import Response

from agent_server.errors import PermissionDenied
from agent_server.gateway.tokens import signing_secret
from http_facade.pages.dashboard.session import APP_PATH, SESSION_COOKIE, secure_cookies

CSRF_COOKIE = "agentgate_csrf"
FIELD = "csrf_token"
_KEY_STATE = "dashboard_csrf_key"
_NEW_NONCE = "dashboard_csrf_nonce"


def _key(request: Request) -> bytes:
    state = request.app.state
    key = getattr(state, _KEY_STATE, None)
    if key is None:  # once per app: the secret may live in a file of the data directory
        secret = signing_secret(request.app.state.services.settings)
        key = hmac.new(secret, b"agentgate dashboard csrf", hashlib.sha256).digest()
        setattr(state, _KEY_STATE, key)
    return key


def _expected(request: Request, nonce: str) -> str:
    session = hashlib.sha256(request.cookies.get(SESSION_COOKIE, "").encode()).hexdigest()
    return hmac.new(_key(request), f"{nonce}|{session}".encode(), hashlib.sha256).hexdigest()


def csrf_token(request: Request) -> str:
    """The token for the forms of the page being rendered (a new nonce is set with the answer)."""
    nonce = request.cookies.get(CSRF_COOKIE) or getattr(request.state, _NEW_NONCE, None)
    if nonce is None:
        nonce = secrets.token_urlsafe(32)
        setattr(request.state, _NEW_NONCE, nonce)
    return _expected(request, nonce)


def set_nonce_cookie(request: Request, response: Response) -> None:
    """Send the nonce a page's token was made from, when the browser had none yet."""
    nonce = getattr(request.state, _NEW_NONCE, None)
    if nonce is not None:
        settings = request.app.state.services.settings
        secure = secure_cookies(settings)
        response.set_cookie(CSRF_COOKIE, nonce, path=APP_PATH, secure=secure, httponly=True, samesite="lax")


def check_csrf(request: Request, submitted: str) -> None:
    """403 ``csrf_token_invalid`` unless ``submitted`` is this browser's token for this session."""
    nonce = request.cookies.get(CSRF_COOKIE)
    if not nonce or not submitted or not hmac.compare_digest(_expected(request, nonce), submitted):
        raise PermissionDenied(
            "This form is out of date or was not sent from this site; reload the page and send it again.",
            code="csrf_token_invalid",
            param=FIELD,
        )
