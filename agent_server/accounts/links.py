"""One-time links sent by mail: a random token in the URL, only its SHA-256 digest at rest.

Links point at pages of the dashboard under ``app_base_url`` (``/app/...``, docs/pages.md). Following
one is a GET that changes nothing: mail scanners fetch links to check them, so the step that uses the
token up is a POST of the token, the page's button (docs/accounts.md, "Why links are confirmed by POST").
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime
from urllib.parse import urlencode

from agent_server.foundation.errors import ValidationFailed
from agent_server.foundation.timeutil import utc

# The dashboard pages that mail links open (their forms call the services of the JSON routes).
VERIFY_PAGE = "/app/register/verify"
RESET_PAGE = "/app/password/reset"  # reset links, and the first admin's link of a tenant made by the platform
INVITE_PAGE = "/app/invitations/accept"  # a member's invitation to an organisation (invitations.py)
REGISTER_PAGE = "/app/register"  # where an organisation is registered (the anonymous-key notice names it)
SIGN_IN_PAGE = "/app/login"
FORGOT_PAGE = "/app/password/forgot"
# The JSON route of reset and invitation tokens (registration tokens: POST /register/verify).
RESET_PATH = "/admin/auth/password/reset"
TOKEN_BYTES = 32


def new_token() -> tuple[str, str]:
    """(token for the link, digest to store)."""
    token = secrets.token_urlsafe(TOKEN_BYTES)
    return token, digest(token)


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def link(base_url: str, path: str, token: str) -> str:
    return f"{base_url.rstrip('/')}{path}?{urlencode({'token': token})}"


def token_state(used_at: datetime | None, expires_at: datetime, now: float) -> str:
    """valid, used or expired (a naive stored time is UTC)."""
    if used_at is not None:
        return "used"
    expires = expires_at if expires_at.tzinfo else expires_at.replace(tzinfo=utc(0).tzinfo)
    return "expired" if expires <= utc(now) else "valid"


def refuse(state: str, *, used: str, expired: str) -> ValidationFailed:
    """The clear error for a link that cannot be used (state is invalid, used or expired)."""
    if state == "used":
        return ValidationFailed(used, code="link_used", param="token")
    if state == "expired":
        return ValidationFailed(expired, code="link_expired", param="token")
    return ValidationFailed(
        "This link is not valid: check that the whole link was copied from the e-mail.",
        code="link_invalid",
        param="token",
    )
