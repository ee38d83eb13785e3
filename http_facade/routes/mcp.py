"""``/api/mcp.php``: the SDK's streamable-HTTP transport behind an exact route, made lenient for plain clients.

- A POST with no Accept header, or any Accept that admits JSON, gets a JSON response; a request that
  asks for notifications (a progress token, a 2026-07-28 log level) from a client accepting SSE, and
  every request of a client accepting only ``text/event-stream``, gets an SSE stream (2026-07-28 too).
- A POST without a JSON Content-Type (curl's form default, none at all) is read as JSON anyway. The
  body is checked against JSON-RPC first (``agent_server/mcp/jsonrpc.py``): -32700, -32600, -32602.
- Stateless by default. With ``AGENTGATE_MCP_SESSIONS`` an ``initialize`` from a client that accepts
  SSE opens a session (``Mcp-Session-Id``): its requests, its ``GET`` stream (resumable with
  ``Last-Event-ID``) and its ``DELETE`` go to the stateful manager; everything else stays stateless.
- Host and Origin are checked here, before the SDK, so a refusal is a JSON-RPC error (421 or 403)
  rather than the SDK's plain text; the configured public host is always allowed.
- A GET without a session returns the manifest as JSON instead of an idle event stream.
- Every response carries ``MCP-Version``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.types import Message, Receive, Scope, Send

from agent_server.capabilities.registry import Registry
from agent_server.capabilities.services import Services
from agent_server.foundation.request_context import AUTHORIZATION
from agent_server.foundation.settings import Settings
from agent_server.mcp.call_context import CALLER
from agent_server.mcp.events import Events
from agent_server.mcp.jsonrpc import Refusal, inspect
from agent_server.mcp.server import RegistryMCPServer, build_mcp_server
from agent_server.mcp.tenant_tools import TenantTools
from http_facade.routes.mcp_callers import MCPCallers, Resolve
from http_facade.routes.mcp_fast import VERSION_LINE, FastPathGate, fast_path
from http_facade.routes.mcp_transport import SessionManager, as_event_stream, read_body

BOTH = b"application/json, text/event-stream"
_VERSION_HEADER = VERSION_LINE  # every answer of the endpoint names its version
_JSON = b"application/json"
SESSION_HEADER = b"mcp-session-id"
MAX_REMEMBERED_HOSTS = 256
_UNDECIDED = object()
VERSION_HEADER = b"mcp-protocol-version"


def transport_security(settings: Settings) -> TransportSecuritySettings:
    """Host and Origin allow-lists from settings; the public host is always allowed (any port if none)."""
    public = settings.public_base_url.rstrip("/")
    scheme = public.split("://", 1)[0] if "://" in public else "https"
    host = settings.public_host.lower()
    hosts = [*settings.allowed_hosts, host]
    origins = [*settings.allowed_origins, f"{scheme}://{host}"]
    if ":" not in host.rsplit("]", 1)[-1]:  # no explicit port: "example.com:443" is the same site
        hosts.append(f"{host}:*")
        origins.append(f"{scheme}://{host}:*")
    return TransportSecuritySettings(allowed_hosts=hosts, allowed_origins=origins)


class HostGuard:
    """DNS-rebinding protection: the Host and (when sent) the Origin must be on the allow-lists.

    Same rules as the SDK's check (exact value or ``name:*`` for any port), but case-insensitive.
    """

    def __init__(self, security: TransportSecuritySettings) -> None:
        self.hosts = [h.lower() for h in security.allowed_hosts]
        self.origins = [o.lower().rstrip("/") for o in security.allowed_origins]
        # The decision per (Host, Origin) as sent: the lists are fixed, so it never changes.
        self._decided: dict[tuple[str, str], tuple[int, str] | None] = {}

    @staticmethod
    def _allowed(value: str, patterns: list[str]) -> bool:
        return any(
            value == pattern or (pattern.endswith(":*") and value.startswith(pattern[:-1]))
            for pattern in patterns
        )

    def refusal(self, scope: Scope) -> tuple[int, str] | None:
        host, origin = _header(scope, b"host"), _header(scope, b"origin")
        key = (host, origin)
        known = self._decided.get(key, _UNDECIDED)
        if known is _UNDECIDED:
            known = self._refusal(host, origin)
            if len(self._decided) < MAX_REMEMBERED_HOSTS:  # a few values in practice; bounded anyway
                self._decided[key] = known
        return known

    def _refusal(self, host: str, origin: str) -> tuple[int, str] | None:
        host = host.strip().lower()
        if not host or not self._allowed(host, self.hosts):
            return 421, f"Host '{host}' is not served here (DNS-rebinding protection)."
        origin = origin.strip().lower().rstrip("/")
        if origin and not self._allowed(origin, self.origins):
            return 403, f"Origin '{origin}' is not allowed to call this MCP server."
        return None


class _Background:
    """Runs the server's background work (event channel, session delivery, content watch) in the app's lifespan."""

    def __init__(self, server: RegistryMCPServer) -> None:
        self.server = server

    @asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        async with self.server.background():
            yield


def session_managers(server: RegistryMCPServer, settings: Settings) -> dict[str, Any]:
    """What the app runs for MCP: two stateless managers (JSON and SSE answers), the stateful one when
    sessions are on, and the background work; each has ``run()``."""
    common: dict[str, Any] = {
        # Host/Origin are checked by HostGuard before the SDK sees the request (JSON-RPC refusals).
        "security_settings": TransportSecuritySettings(enable_dns_rebinding_protection=False),
        "max_request_body_size": settings.max_request_bytes,
    }
    lowlevel = server._lowlevel_server  # the SDK's documented seam for custom transports
    managers: dict[str, Any] = {
        "json": StreamableHTTPSessionManager(app=lowlevel, stateless=True, json_response=True, **common),
        "sse": StreamableHTTPSessionManager(app=lowlevel, stateless=True, json_response=False, **common),
        "background": _Background(server),
    }
    if settings.mcp_sessions:
        managers["sessions"] = SessionManager(server, settings, **common)
    return managers


def build_endpoint(
    registry: Registry,
    tenant_registry: Registry,
    site_services: Services,
    services: Services,
    events: Events,
    caller: Resolve,
    manifest: Callable[[], dict],
) -> tuple[MCPEndpoint, list[Any]]:
    """The endpoint and what runs beside it; ``MCPOnDemand`` (mcp_on_demand.py) calls this at the
    first request. MCP serves anonymous callers: their model calls spend the site's budget
    (``site_services``); a caller with an OAuth token sees its organisation's tools too."""
    settings = services.settings
    server = build_mcp_server(registry, site_services, events)
    server.tenant = TenantTools(tenant_registry, services)
    managers = session_managers(server, settings)
    endpoint = MCPEndpoint(
        managers,
        manifest,
        HostGuard(transport_security(settings)),
        fast_path=fast_path(server, settings),  # hot requests skip the SDK's transport
        callers=MCPCallers(caller, server.tenant, settings.public_base_url),
    )
    return endpoint, list(managers.values())


class MCPEndpoint:
    """The ASGI app behind the exact route ``/api/mcp.php`` (and ``/api/mcp.php/``)."""

    def __init__(
        self,
        managers: dict[str, Any],
        manifest: Callable[[], dict],
        guard: HostGuard | None = None,
        fast_path: FastPathGate | None = None,
        callers: MCPCallers | None = None,
    ) -> None:
        self.json: StreamableHTTPSessionManager = managers["json"]
        self.sse: StreamableHTTPSessionManager = managers["sse"]
        self.sessions: StreamableHTTPSessionManager | None = managers.get("sessions")
        self.manifest = manifest
        self.guard = guard
        self.fast_path = fast_path
        self.callers = callers  # OAuth access tokens: the caller and its organisation's tools

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        method = scope["method"]

        async def send_with_version(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), _VERSION_HEADER]
            await send(message)

        in_session = self.sessions is not None and bool(_header(scope, SESSION_HEADER))
        if method in ("GET", "HEAD") and not (in_session and method == "GET"):
            await self._json(send, 200, self.manifest(), head=method == "HEAD")
            return
        if method not in ("GET", "POST", "DELETE") or (method == "DELETE" and self.sessions is None):
            await self._rpc_error(
                send, 405, -32600, f"{method} is not supported; POST JSON-RPC or GET the manifest."
            )
            return
        if method == "DELETE" and not in_session:  # as the MCP transport asks of a missing session id
            await self._rpc_error(
                send, 400, -32600, "Bad Request: send the Mcp-Session-Id of the session to end."
            )
            return
        refusal = self.guard.refusal(scope) if self.guard is not None else None
        if refusal is not None:
            await self._rpc_error(send, refusal[0], -32600, refusal[1])
            return
        if method != "POST":  # the session's SSE stream (GET) or its end (DELETE)
            assert self.sessions is not None
            await self.sessions.handle_request(scope, receive, send_with_version)
            return
        # Tools that authenticate by themselves (the ACP tools) read the caller's credential; the tasks
        # this request starts (the SDK's server task, the fast path) inherit it.
        AUTHORIZATION.set(_header(scope, b"authorization") or None)
        if self.callers is not None:
            decision = await self.callers.decide(scope, receive, send_with_version)
            if decision.refused:
                return
            if decision.caller is not None:  # answered for this token alone: no fast path, no session
                bound = CALLER.set(decision.caller)
                try:
                    await self._answer(scope, decision.receive, send, send_with_version, for_caller=True)
                finally:
                    CALLER.reset(bound)
                return
            receive = decision.receive
        await self._answer(scope, receive, send, send_with_version)

    async def _answer(
        self, scope: Scope, receive: Receive, send: Send, send_with_version: Send, for_caller: bool = False
    ) -> None:
        """A POST, through the fast path, a session or the stateless managers."""
        in_session = self.sessions is not None and bool(_header(scope, SESSION_HEADER)) and not for_caller
        accept = _header(scope, b"accept").lower()
        accepts_sse = "text/event-stream" in accept
        sse_only = accepts_sse and "application/json" not in accept and "*/*" not in accept
        if self.fast_path is not None and not sse_only and not for_caller:  # hot stateless JSON (mcp_fast.py)
            # the gate's answer carries MCP-Version itself: one send wrapper less on the hot path
            replay = await self.fast_path.try_answer(scope, receive, send)
            if replay is None:
                return
            receive = replay
        # What the fast path left (it takes only plain, valid requests) is checked before the SDK reads it.
        body, receive = await read_body(receive)
        inbound = inspect(body)
        if isinstance(inbound, Refusal):
            await self._json(send, inbound.status, inbound.body())
            return
        handshake = _header(scope, VERSION_HEADER) in ("", *HANDSHAKE_PROTOCOL_VERSIONS)
        opens_session = inbound.method == "initialize" and accepts_sse and handshake and not for_caller
        if self.sessions is not None and (in_session or opens_session):
            manager = self.sessions
        elif sse_only or (accepts_sse and inbound.wants_stream):
            manager = self.sse
        else:
            manager = self.json
        # The body is read as JSON whatever the client declared (the SDK insists on application/json);
        # MCP's routing headers lose the whitespace around them (HTTP's OWS), which the SDK compares as is.
        headers = [
            (k, v.strip(b" \t") if k.startswith(b"mcp-") else v)
            for k, v in scope["headers"]
            if k not in (b"accept", b"content-type")
        ]
        headers += [(b"accept", BOTH), (b"content-type", _JSON)]
        answer = as_event_stream(send_with_version) if sse_only else send_with_version
        await manager.handle_request({**scope, "headers": headers}, receive, answer)

    async def _rpc_error(self, send: Send, status: int, code: int, message: str) -> None:
        body = {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}
        allowed = b"GET, HEAD, POST, DELETE" if self.sessions is not None else b"GET, HEAD, POST"
        extra = [(b"allow", allowed)] if status == 405 else None
        await self._json(send, status, body, extra=extra)

    async def _json(
        self, send: Send, status: int, body: dict, *, head: bool = False, extra: list | None = None
    ) -> None:
        payload = json.dumps(body, ensure_ascii=False).encode()
        headers = [
            (b"content-type", b"application/json; charset=utf-8"),
            (b"content-length", str(len(payload)).encode()),
            _VERSION_HEADER,
            *(extra or []),
        ]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": b"" if head else payload})


def _header(scope: Scope, name: bytes) -> str:
    for key, value in scope["headers"]:
        if key == name:
            return value.decode("latin-1")
    return ""
