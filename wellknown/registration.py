"""What ``GET``/``OPTIONS /register`` and ``/consultant-code/validate`` say (spec 5.5).

Registration is self-serve with no manual approval; the API flow is planned, so the document
describes it and points people to the portal.
"""

from __future__ import annotations

import hmac
from typing import Any

from agent_server.content import Plan
from agent_server.settings import Settings

PASSWORD_MIN_LENGTH = 12


def registration(settings: Settings, plans: list[Plan]) -> dict[str, Any]:
    portal = (settings.app_url or settings.public_base_url).rstrip("/")
    base = settings.public_base_url.rstrip("/")
    return {
        "registration_url": f"{portal}/register",
        "self_serve": True,
        "manual_approval": False,
        "api_flow": {
            "status": "planned",
            "message": f"Register at {portal}/register; registering through this API comes later.",
        },
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
            {
                "name": "password",
                "type": "string",
                "required": False,
                "description": "Only for the email_password method.",
            },
            {
                "name": "consultant_code",
                "type": "string",
                "required": False,
                "validate": f"{base}/consultant-code/validate?code=",
            },
        ],
        "password_rules": {
            "min_length": PASSWORD_MIN_LENGTH,
            "breach_checked": True,
            "description": f"At least {PASSWORD_MIN_LENGTH} characters; passwords found in breach lists are refused.",
        },
        "methods": ["email_password", "webauthn"],
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
        "agents": {"endpoint": f"{base}/agent/auth", "status": "planned"},
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
