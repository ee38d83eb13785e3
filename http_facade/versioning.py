"""The versioning middleware (spec 9) and the CORS settings that expose its headers.

Pure ASGI and cheap on the hot path: a request without an ``API-Version`` header gets one prebuilt
header tuple appended to its response and nothing else. A pinned request is resolved by the
``VersionRegistry``; the chosen version is left in ``scope["state"]["api_version"]`` for routes.
"""

from __future__ import annotations

import re

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agent_server.clock import Clock
from agent_server.versions import VersionRegistry
from http_facade.errors import render_error

# Unversioned routes (spec 4.5 and 9): the status document and its aliases.
UNVERSIONED = frozenset({"/api/status.php", "/status", "/.well-known/health"})
_REQUEST_HEADER = b"api-version"
_RESPONSE_HEADER = b"api-version"
EXPOSED_HEADERS = (
    "API-Version",
    "Deprecation",
    "Sunset",
    "Link",
    "Warning",
    "MCP-Version",
    "NLWeb-Version",
    "Mcp-Session-Id",
    "Retry-After",
    "RateLimit",
    "RateLimit-Policy",
    "RateLimit-Limit",
    "RateLimit-Remaining",
    "RateLimit-Reset",
    "X-RateLimit-Limit",
    "X-RateLimit-Remaining",
    "X-RateLimit-Reset",
    "Idempotency-Replayed",
    "WWW-Authenticate",
)


class Versioning:
    """Adds ``API-Version`` to every versioned response; honours and checks a pinned version."""

    def __init__(self, app: ASGIApp, versions: VersionRegistry, clock: Clock, base_url: str) -> None:
        self.app, self.versions, self.clock, self.base_url = app, versions, clock, base_url
        self.current = versions.current.name.encode()
        self.default = (_RESPONSE_HEADER, self.current)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in UNVERSIONED:
            await self.app(scope, receive, send)
            return
        requested: bytes | None = None
        for name, value in scope["headers"]:
            if name == _REQUEST_HEADER:
                requested = value
                break
        if requested is None or requested == self.current:
            await self.app(scope, receive, _with_headers(send, (self.default,)))
            return
        await self._pinned(scope, receive, send, requested.decode("latin-1"))

    async def _pinned(self, scope: Scope, receive: Receive, send: Send, requested: str) -> None:
        resolution = self.versions.resolve(requested, self.clock.now(), self.base_url)
        extra = (
            (_RESPONSE_HEADER, resolution.version.encode()),
            *((k.lower().encode(), v.encode("latin-1")) for k, v in resolution.headers),
        )
        if resolution.error is not None:
            response = render_error(resolution.error, scope["path"], self.base_url)
            await response(scope, receive, _with_headers(send, extra))
            return
        scope.setdefault("state", {})["api_version"] = resolution.version
        await self.app(scope, receive, _with_headers(send, extra))


def _with_headers(send: Send, extra: tuple[tuple[bytes, bytes], ...]) -> Send:
    async def sender(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = message.get("headers")
            if not isinstance(headers, list):  # Starlette sends its own list, so this is rare
                headers = message["headers"] = list(headers or ())
            for name, _ in headers:
                if name == _RESPONSE_HEADER:  # a route that set its own API-Version keeps it
                    headers.extend(h for h in extra if h[0] != _RESPONSE_HEADER)
                    break
            else:
                headers.extend(extra)
        await send(message)

    return sender


def cors_options(allowed_origins: list[str]) -> dict[str, object]:
    """Keyword arguments of Starlette's ``CORSMiddleware`` for the configured origins.

    ``http://host:*`` (any port) has no meaning to ``CORSMiddleware``, so such origins become a regex.
    """
    exact = [o.rstrip("/") for o in allowed_origins if not o.endswith(":*")]
    patterns = [re.escape(o[:-2]) + r"(:\d{1,5})?" for o in allowed_origins if o.endswith(":*")]
    return {
        "allow_origins": exact,
        "allow_origin_regex": "|".join(f"(?:{p})" for p in patterns) or None,
        "allow_methods": ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"],
        "allow_headers": ["*"],
        "expose_headers": list(EXPOSED_HEADERS),
        "max_age": 600,
    }
