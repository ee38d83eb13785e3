"""``/api/mcp.php``: the SDK's streamable-HTTP transport behind an exact route, made lenient for plain clients.

- A POST with no Accept header, or any Accept that admits JSON, gets a JSON response.
- A POST that accepts only ``text/event-stream`` gets the same answer as an SSE stream.
- A POST without a JSON Content-Type (curl's form default, none at all) is read as JSON anyway;
  a body that is not JSON gets the JSON-RPC parse error -32700.
- Host and Origin are checked here, before the SDK, so a refusal is a JSON-RPC error (421 or 403)
  rather than the SDK's plain text; the configured public host is always allowed.
- GET returns the manifest as JSON instead of an idle event stream.
- Every response carries ``MCP-Version``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import Message, Receive, Scope, Send

from agent_server.mcp import MCP_PROTOCOL_VERSION, RegistryMCPServer
from agent_server.settings import Settings

BOTH = b"application/json, text/event-stream"
_VERSION_HEADER = (b"mcp-version", MCP_PROTOCOL_VERSION.encode())
_JSON = b"application/json"


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

    @staticmethod
    def _allowed(value: str, patterns: list[str]) -> bool:
        return any(
            value == pattern or (pattern.endswith(":*") and value.startswith(pattern[:-1]))
            for pattern in patterns
        )

    def refusal(self, scope: Scope) -> tuple[int, str] | None:
        host = _header(scope, b"host").strip().lower()
        if not host or not self._allowed(host, self.hosts):
            return 421, f"Host '{host}' is not served here (DNS-rebinding protection)."
        origin = _header(scope, b"origin").strip().lower().rstrip("/")
        if origin and not self._allowed(origin, self.origins):
            return 403, f"Origin '{origin}' is not allowed to call this MCP server."
        return None


def session_managers(
    server: RegistryMCPServer, settings: Settings
) -> dict[str, StreamableHTTPSessionManager]:
    """Two stateless managers over one server: JSON answers and SSE answers."""
    common: dict[str, Any] = {
        "stateless": True,
        # Host/Origin are checked by HostGuard before the SDK sees the request (JSON-RPC refusals).
        "security_settings": TransportSecuritySettings(enable_dns_rebinding_protection=False),
        "max_request_body_size": settings.max_request_bytes,
    }
    lowlevel = server._lowlevel_server  # the SDK's documented seam for custom transports
    return {
        "json": StreamableHTTPSessionManager(app=lowlevel, json_response=True, **common),
        "sse": StreamableHTTPSessionManager(app=lowlevel, json_response=False, **common),
    }


class MCPEndpoint:
    """The ASGI app behind the exact route ``/api/mcp.php`` (and ``/api/mcp.php/``)."""

    def __init__(
        self,
        managers: dict[str, StreamableHTTPSessionManager],
        manifest: Callable[[], dict],
        guard: HostGuard | None = None,
    ) -> None:
        self.managers = managers
        self.manifest = manifest
        self.guard = guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        method = scope["method"]
        if method in ("GET", "HEAD"):
            await self._json(send, 200, self.manifest(), head=method == "HEAD")
            return
        if method != "POST":
            await self._rpc_error(
                send, 405, -32600, f"{method} is not supported; POST JSON-RPC or GET the manifest."
            )
            return
        refusal = self.guard.refusal(scope) if self.guard is not None else None
        if refusal is not None:
            await self._rpc_error(send, refusal[0], -32600, refusal[1])
            return
        accept = _header(scope, b"accept").lower()
        sse_only = "text/event-stream" in accept and "application/json" not in accept and "*/*" not in accept
        manager = self.managers["sse" if sse_only else "json"]
        # The body is read as JSON whatever the client declared (the SDK insists on application/json).
        headers = [(k, v) for k, v in scope["headers"] if k not in (b"accept", b"content-type")]
        headers += [(b"accept", BOTH), (b"content-type", _JSON)]

        async def send_with_version(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), _VERSION_HEADER]
            await send(message)

        await manager.handle_request({**scope, "headers": headers}, receive, send_with_version)

    async def _rpc_error(self, send: Send, status: int, code: int, message: str) -> None:
        body = {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}
        extra = [(b"allow", b"GET, HEAD, POST")] if status == 405 else None
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
