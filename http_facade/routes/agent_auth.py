"""``POST /agent/auth`` (spec 2.9, docs/oauth.md).

Both identity types are live: ``anonymous`` (an e-mail address gets a Free-plan key at once,
agent_server/agent_auth/anonymous.py) and ``identity_assertion`` (an ID-JAG from an organisation's
identity provider gets a key of that organisation, agent_server/agent_auth/asserted.py).
The OAuth endpoints are http_facade/routes/oauth.py. The body is validated first, so a malformed
request is a 400.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from agent_server.agent_auth.asserted import asserted_keys_of
from agent_server.foundation.errors import ValidationFailed
from http_facade.deps import client_ip
from wellknown import oauth

router = APIRouter(tags=["auth"])


NO_STORE = {"Cache-Control": "no-store"}  # the answer holds a secret


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
        max_length=254,
        description="For anonymous: the address the key belongs to (a notice is sent there); it must "
        "be deliverable in form and not disposable.",
    )
    assertion: str | None = Field(
        default=None, min_length=1, max_length=16384, description="For identity_assertion: the ID-JAG."
    )
    assertion_type: Literal["urn:ietf:params:oauth:token-type:id-jag"] = oauth.ID_JAG


class AgentCredential(BaseModel):
    api_key: str = Field(description="Send it as 'Authorization: Bearer <key>' on /v1; shown only here.")
    expires_at: datetime
    scopes: list[str]


@router.post(
    oauth.AGENT_AUTH_PATH,
    status_code=201,
    summary="Agent sign-in: a key for an anonymous agent or for an asserted person",
    response_model=AgentCredential,
)
async def agent_auth(body: AgentAuthRequest, request: Request) -> JSONResponse:
    needed = "email" if body.identity_type == "anonymous" else "assertion"
    value = getattr(body, needed)
    if value is None:
        raise ValidationFailed(
            f"'{needed}' is required when identity_type is {body.identity_type}.", param=needed
        )
    accounts = request.app.state.accounts
    if body.identity_type == "identity_assertion":
        issued = await asserted_keys_of(accounts).issue(value, client_ip(request))
    else:
        issued = await accounts.anonymous.issue(value, client_ip(request))
    return JSONResponse(issued.body(), status_code=201, headers=NO_STORE)
