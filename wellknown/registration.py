"""What ``GET``/``OPTIONS /register`` and ``/consultant-code/validate`` say (contract 5.5).

The document describes the live flow only: ``methods`` comes from what the app serves, and a test
checks every endpoint it names against the app's routes (tests/accounts/test_register_document.py).
"""

from __future__ import annotations

import hmac
from typing import Any

from agent_server.foundation.settings import Settings
from agent_server.gateway.passwords import MIN_LENGTH
from agent_server.knowledge.pack import Plan

METHODS = {
    "password": {
        "id": "email_password",
        "description": "E-mail and password; the password is checked when you register.",
        "body": {"method": "password", "password": "<12+ characters>"},
    },
    "passkey": {
        "id": "webauthn",
        "description": "E-mail and a passkey (WebAuthn): the answer carries creation options; POST the "
        "new credential to /register/passkey, then follow the link.",
        "body": {"method": "passkey"},
    },
}


def _endpoint(base: str, method: str, path: str, what: str) -> dict[str, str]:
    return {"method": method, "url": f"{base}{path}", "description": what}


def registration(
    settings: Settings, plans: list[Plan], methods: list[str], sign_in: list[str]
) -> dict[str, Any]:
    """``methods``: registration methods served (password, passkey); ``sign_in``: password, passkey, sso."""
    portal, base = settings.app_base_url, settings.public_base_url.rstrip("/")
    ttl = settings.registration_link_ttl_seconds
    endpoints = {
        "register": _endpoint(base, "POST", "/register", "Start: e-mail, organisation, plan, method."),
        "verify": _endpoint(base, "POST", "/register/verify", "Use the link's token: creates and signs in."),
        "link": _endpoint(base, "GET", "/register/verify", "What a link does, without using it up."),
        "login": _endpoint(base, "POST", "/admin/auth/login", "Sign in with e-mail and password."),
        "password_forgot": _endpoint(base, "POST", "/admin/auth/password/forgot", "Mail a reset link."),
        "password_reset": _endpoint(
            base, "POST", "/admin/auth/password/reset", "Set a password with a link."
        ),
    }
    if "passkey" in methods:
        endpoints["register_passkey"] = _endpoint(
            base, "POST", "/register/passkey", "Keep the passkey created at registration."
        )
    if "passkey" in sign_in:
        endpoints["passkey_options"] = _endpoint(
            base, "POST", "/admin/auth/passkey/options", "Passkey challenge."
        )
        endpoints["passkey_login"] = _endpoint(base, "POST", "/admin/auth/passkey", "Sign in with a passkey.")
    if "sso" in sign_in:
        endpoints["sso_discover"] = _endpoint(base, "POST", "/sso/discover", "Single sign-on for an e-mail.")
    return {
        "registration_url": f"{portal}/app/register",  # the form for people; the API is POST /register
        "self_serve": True,
        "manual_approval": False,
        "api_flow": {
            "status": "live",
            "steps": [
                "POST /register with email, organisation, plan and a password (or method passkey).",
                "Open the link mailed to you; POST its token to /register/verify within "
                f"{ttl // 60} minutes. The organisation is created, its trial starts and you are signed in.",
                "Create API keys with POST /admin/api-keys and call /v1 with them.",
            ],
        },
        "endpoints": endpoints,
        "fields": [
            {
                "name": "email",
                "type": "string",
                "format": "email",
                "required": True,
                "verification": "one-time link",
            },
            {"name": "organisation", "type": "string", "required": True, "description": "The tenant's name."},
            {"name": "plan", "type": "string", "required": True, "enum": [p.id for p in plans]},
            {"name": "method", "type": "string", "required": False, "enum": methods},
            {"name": "password", "type": "string", "required": False, "description": "For method password."},
            {
                "name": "consultant_code",
                "type": "string",
                "required": False,
                "validate": f"{base}/consultant-code/validate?code=",
            },
        ],
        "password_rules": {
            "min_length": MIN_LENGTH,
            "breach_checked": True,
            "description": f"At least {MIN_LENGTH} characters; passwords found in breach lists are refused.",
        },
        "methods": [METHODS[m]["id"] for m in methods],
        "method_details": [METHODS[m] for m in methods],
        "sign_in": sign_in,
        "verification": {
            "single_use": True,
            "expires_in_seconds": ttl,
            "confirm_with": "POST /register/verify",
        },
        "limits": {
            "registrations_per_ip_per_hour": settings.register_limit_per_ip,
            "registrations_per_email_per_hour": settings.register_limit_per_email,
        },
        "plans": [
            {
                "id": p.id,
                "name": p.name,
                "price_monthly": p.price_monthly,
                "currency": p.currency,
                "trial_days": p.trial_days,
                "card_required_for_trial": False,
                "requests_per_minute": p.requests_per_minute,
            }
            for p in plans
        ],
        "trial": {"days": max((p.trial_days for p in plans), default=0), "card_required": False},
        "agents": {
            "endpoint": f"{base}/agent/auth",
            "status": "live",
            "identity_types": ["anonymous", "identity_assertion"],
            "description": "An agent gets a Free-plan key at once for an e-mail address; registering "
            "that address later makes its live keys the organisation's. An agent holding an ID-JAG "
            "from an organisation's identity provider gets a key of that organisation.",
        },
    }


def normalise_code(code: str) -> str:
    return code.strip().upper()


def consultant_code(settings: Settings, code: str) -> dict[str, Any]:
    wanted = normalise_code(code)
    # Compare against every known code in constant time, so timing does not reveal a prefix.
    valid = False
    for known in settings.consultant_codes:
        valid |= hmac.compare_digest(normalise_code(known).encode(), wanted.encode())
    return {
        "code": wanted,
        "valid": valid,
        "message": (
            "Valid: enter it at registration."
            if valid
            else "Unknown consultant code; check it with your consultant or register without one."
        ),
    }
