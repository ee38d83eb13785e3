"""The planned authentication endpoints (spec 5.7): OAuth 2.0 with PKCE and ``POST /agent/auth``.

They exist so the OAuth metadata names real URLs, and answer 501 ``not_implemented`` with directions
to what is live. ``/agent/auth`` validates its body first, so a malformed request is a 400.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from agent_server.foundation.errors import NotImplementedYet, ValidationFailed
from wellknown import oauth

router = APIRouter(tags=["auth"])


PLANNED = {501: {"description": "Planned, not live yet."}}


@router.get(oauth.AUTHORIZE_PATH, summary="OAuth authorization endpoint (planned)", responses=PLANNED)
async def oauth_authorize() -> None:
    raise NotImplementedYet(
        "OAuth 2.0 with PKCE is planned and not live yet. Use an API key (Authorization: Bearer or "
        "X-API-Key) on /v1; see /AGENTS.md."
    )


@router.post(oauth.TOKEN_PATH, summary="OAuth token endpoint (planned)", responses=PLANNED)
async def oauth_token() -> None:
    raise NotImplementedYet(
        "The OAuth token endpoint is planned and not live yet. Admins obtain a JWT from "
        "POST /admin/auth/login; tenants use API keys."
    )


def _required_by_type() -> dict[str, Any]:
    rules = (("anonymous", "email"), ("identity_assertion", "assertion"))
    return {
        "allOf": [
            {"if": {"properties": {"identity_type": {"const": kind}}}, "then": {"required": [field]}}
            for kind, field in rules
        ]
    }


class AgentAuthRequest(BaseModel):
    """Spec 2.9. ``email`` is required for ``anonymous``, ``assertion`` for ``identity_assertion``."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_required_by_type())

    identity_type: Literal["anonymous", "identity_assertion"]
    email: str | None = Field(
        default=None,
        pattern=r"^[^@\s]+@[^@\s]+\.[^@\s]+$",
        max_length=254,
        description="For anonymous: where the free-tier key is sent.",
    )
    assertion: str | None = Field(
        default=None, min_length=1, max_length=16384, description="For identity_assertion: the ID-JAG."
    )
    assertion_type: Literal["urn:ietf:params:oauth:token-type:id-jag"] = oauth.ID_JAG


class AgentCredential(BaseModel):
    api_key: str
    expires_at: datetime
    scopes: list[str]


@router.post(
    oauth.AGENT_AUTH_PATH,
    status_code=201,
    summary="Agent registration (planned): a key for an anonymous or asserted identity",
    responses=PLANNED,
)
async def agent_auth(body: AgentAuthRequest) -> AgentCredential:
    needed = "email" if body.identity_type == "anonymous" else "assertion"
    if getattr(body, needed) is None:
        raise ValidationFailed(
            f"'{needed}' is required when identity_type is {body.identity_type}.", param=needed
        )
    raise NotImplementedYet(
        f"POST /agent/auth is planned and not live yet (the {body.identity_type} request was valid). "
        "Register at /register for an API key meanwhile."
    )
