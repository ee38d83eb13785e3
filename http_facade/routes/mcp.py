"""``/api/mcp.php``: the SDK's streamable-HTTP transport behind an exact route, made lenient for plain clients.

- A POST with no Accept header, or any Accept that admits JSON, gets a JSON response.
- A POST that accepts only ``text/event-stream`` gets the same answer as an SSE stream.
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


def transport_security(settings: Settings) -> TransportSecuritySettings:
    """Host and Origin allow-lists from settings; the public host is always allowed."""
    public = settings.public_base_url.rstrip("/")
    hosts = [*settings.allowed_hosts, settings.public_host]
    origins = [*settings.allowed_origins, public.split("/", 3)[0] + "//" + settings.public_host]
    return TransportSecuritySettings(allowed_hosts=hosts, allowed_origins=origins)


def session_managers(
    server: RegistryMCPServer, settings: Settings
) -> dict[str, StreamableHTTPSessionManager]:
    """Two stateless managers over one server: JSON answers and SSE answers."""
    common: dict[str, Any] = {
        "stateless": True,
        "security_settings": transport_security(settings),
        "max_request_body_size": settings.max_request_bytes,
    }
    lowlevel = server._lowlevel_server  # the SDK's documented seam for custom transports
    return {
        "json": StreamableHTTPSessionManager(app=lowlevel, json_response=True, **common),
        "sse": StreamableHTTPSessionManager(app=lowlevel, json_response=False, **common),
    }


class MCPEndpoint:
    """The ASGI app behind the exact route ``/api/mcp.php``."""

    def __init__(
        self, managers: dict[str, StreamableHTTPSessionManager], manifest: Callable[[], dict]
    ) -> None:
        self.managers = managers
        self.manifest = manifest

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        method = scope["method"]
        if method in ("GET", "HEAD"):
            await self._json(send, 200, self.manifest(), head=method == "HEAD")
            return
        if method != "POST":
            body = {
                "jsonrpc": "2.0",
                "id": None,
                "error": {"code": -32600, "message": f"{method} is not supported"},
            }
            await self._json(send, 405, body, extra=[(b"allow", b"GET, HEAD, POST")])
            return
        accept = _header(scope, b"accept").lower()
        sse_only = "text/event-stream" in accept and "application/json" not in accept and "*/*" not in accept
        manager = self.managers["sse" if sse_only else "json"]
        headers = [(k, v) for k, v in scope["headers"] if k != b"accept"] + [(b"accept", BOTH)]

        async def send_with_version(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), _VERSION_HEADER]
            await send(message)

        await manager.handle_request({**scope, "headers": headers}, receive, send_with_version)

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
