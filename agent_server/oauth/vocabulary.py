"""The OAuth server's words and answers, importable without authlib: every worker names them
(discovery, /v1's bearer tokens, the MCP endpoint, the routes), while authlib loads at the first
OAuth flow (service.py: ``OAuthService.flows``)."""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

# What a client may ask for: the gateway's scopes (never admin), those of the tenant's MCP tools, and
# commerce:checkout (the ACP tools on /api/mcp.php for the organisation; docs/agentic-commerce.md).
SCOPES = (
    "chat", "embeddings", "files", "models", "usage:read", "keys:read", "keys:write", "logs:read",
    "commerce:checkout",
)  # fmt: skip
# A client that names no scope gets these: buying on the person's behalf is asked for by name only.
DEFAULT_SCOPES = tuple(scope for scope in SCOPES if scope != "commerce:checkout")
AUTH_METHODS = ("none", "client_secret_basic", "client_secret_post")
GRANT_TYPES = ("authorization_code", "refresh_token", "urn:ietf:params:oauth:grant-type:jwt-bearer")
ACCESS_PREFIX, REFRESH_PREFIX = "oat_", "ort_"


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class Owner:
    """The person who consented, in their organisation: who a code and its tokens act for."""

    user_id: str
    tenant_id: str

    def get_user_id(self) -> str:
        return self.user_id


Items = Iterable[tuple[str, str]]
Answer = tuple[int, Any, list[tuple[str, str]]]
# An ID-JAG's verified assertion and its person (agent_server/agent_auth/asserted.py: AssertedKeys.person).
Identify = Callable[[str], Awaitable[tuple[Any, Any]]]
SCOPE_TEXT = {
    "chat": "send chat and completion requests to the models of your plan, spending your organisation's tokens",
    "embeddings": "create embeddings with your plan's models",
    "files": "upload and read files",
    "models": "list the models your organisation may use",
    "usage:read": "read your organisation's usage and spend",
    "keys:read": "list your organisation's API keys (never their secrets)",
    "keys:write": "create API keys for your organisation, with scopes it holds itself",
    "logs:read": "read your organisation's request log",
    "commerce:checkout": "buy from the catalogue on your behalf (trainings, consulting packages, hardware), "
    "paying with a payment token you give it; the orders are your organisation's",
}


@dataclass(frozen=True, slots=True)
class ConsentRequest:
    """What the consent page shows: the client, where it sends the answer, and each scope in words."""

    client_id: str
    client_name: str
    redirect_host: str
    scopes: list[tuple[str, str]]


class OAuthError(Exception):
    """An authorization request that cannot go back to the client: shown to the person instead."""

    def __init__(self, answer: Answer) -> None:
        super().__init__(str(answer[1]))
        self.answer = answer

    @property
    def redirect(self) -> str | None:
        return next((value for name, value in self.answer[2] if name.lower() == "location"), None)
