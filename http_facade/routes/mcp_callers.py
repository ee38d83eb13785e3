"""Who calls ``/api/mcp.php`` (docs/oauth.md, "MCP"): anonymous, or the holder of an OAuth access
token (``Authorization: Bearer oat_…``), whose organisation's tools it then sees; any other bearer
credential (an agent platform's, for the commerce tools) is left to the tools that take it.

- No token: public, as always; but calling a tenant tool without one is HTTP 401 with the RFC 9728
  challenge naming the scope it needs, which is what starts an MCP client's OAuth flow.
- A token that is not live (expired, revoked, for another resource, its person gone): HTTP 401.
- A live token calling a tenant tool whose scope it lacks: HTTP 403 ``insufficient_scope`` naming
  the scope, so the client can ask the person for more (a step-up). The same for the ACP tools
  (tools/commerce.py) without ``commerce:checkout``: with it they buy for the token's organisation;
  without a token they take an agent platform's credential, so no OAuth challenge is sent.
- A live token: the caller, for the SDK's handlers (``CALLER``); such requests skip the fast path
  and the stateful sessions, so each request is answered for the token it carries.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from starlette.types import Receive, Scope, Send

from agent_server.capabilities.context import Principal
from agent_server.commerce.platforms import COMMERCE_SCOPE
from agent_server.mcp.tenant_tools import TenantTools
from agent_server.oauth.vocabulary import ACCESS_PREFIX
from http_facade.routes.mcp_transport import read_body
from tools.commerce import ACP_TOOLS
from wellknown.oauth import bearer_challenge

Resolve = Callable[[str], Awaitable[Principal | None]]
# Public tools an OAuth token may call only with a scope (an agent platform's credential needs none).
TOKEN_SCOPES = {tool.__name__: COMMERCE_SCOPE for tool in ACP_TOOLS}


@dataclass
class Decision:
    caller: Principal | None
    receive: Receive
    refused: bool = False


def _bearer(scope: Scope) -> str | None:
    for key, value in scope["headers"]:
        if key == b"authorization":
            kind, _, token = value.decode("latin-1").partition(" ")
            return token.strip() if kind.lower() == "bearer" and token.strip() else None
    return None


def _tool_called(body: bytes) -> str | None:
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(message, dict) or message.get("method") != "tools/call":
        return None
    params = message.get("params")
    name = params.get("name") if isinstance(params, dict) else None
    return name if isinstance(name, str) else None


class MCPCallers:
    def __init__(self, resolve: Resolve, tenant: TenantTools, base_url: str) -> None:
        self.resolve, self.tenant, self.challenge = resolve, tenant, bearer_challenge(base_url)

    async def decide(self, scope: Scope, receive: Receive, send: Send) -> Decision:
        """The caller of a POST, or a 401 sent (``refused``)."""
        token = _bearer(scope)
        # Only OAuth access tokens name a caller here; another credential (an agent platform's, which
        # the commerce tools check themselves) leaves the request anonymous to this gate.
        if token is not None and token.startswith(ACCESS_PREFIX):
            caller = await self.resolve(token)
            if caller is None:
                await self._unauthorized(send, "The access token is not valid (expired, revoked or unknown).")
                return Decision(None, receive, refused=True)
            body, receive = await read_body(receive)
            name = _tool_called(body)
            needed = (self.tenant.scope_of(name) or TOKEN_SCOPES.get(name)) if name is not None else None
            if needed and needed not in caller.scopes:  # RFC 6750 3.1: the client may ask for more
                await self._unauthorized(send, f"The tool {name} needs the scope {needed}.", needed, 403)
                return Decision(None, receive, refused=True)
            return Decision(caller, receive)
        body, receive = await read_body(receive)
        name = _tool_called(body) if self.tenant.may_be_named(body) else None
        needed = self.tenant.scope_of(name) if name is not None else None
        if needed is not None:
            await self._unauthorized(
                send, f"The tool {name} answers for an organisation: sign in with OAuth.", needed
            )
            return Decision(None, receive, refused=True)
        return Decision(None, receive)

    async def _unauthorized(
        self, send: Send, message: str, scope: str | None = None, status: int = 401
    ) -> None:
        challenge = self.challenge + (f', scope="{scope}"' if scope else "")
        if status == 403:
            challenge = challenge.replace('error="invalid_token"', 'error="insufficient_scope"')
        body = json.dumps(
            {"jsonrpc": "2.0", "id": None, "error": {"code": -32001, "message": message}}
        ).encode()
        headers = [
            (b"content-type", b"application/json; charset=utf-8"),
            (b"content-length", str(len(body)).encode()),
            (b"www-authenticate", challenge.encode()),
        ]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})
