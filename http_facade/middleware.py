"""Pure ASGI middleware (no per-request task or copy): the body size limit."""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agent_server.errors import PayloadTooLarge, gateway_envelope, site_envelope
from agent_server.mcp import MCP_PROTOCOL_VERSION
from http_facade.errors import uses_gateway_envelope
from wellknown.mcp import MCP_PATH


class BodyLimit:
    """Refuse a body over ``limit`` bytes with 413, by Content-Length or while it streams in."""

    def __init__(self, app: ASGIApp, limit: int, base_url: str) -> None:
        self.app, self.limit, self.base_url = app, limit, base_url

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        for name, value in scope["headers"]:
            if name == b"content-length" and value.isdigit() and int(value) > self.limit:
                await self._refuse(scope, send)
                return
        received = 0
        started = exceeded = False

        async def counted_receive() -> Message:
            nonlocal received, exceeded
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    exceeded = True
                    raise _TooLarge
            return message

        async def tracked_send(message: Message) -> None:
            nonlocal started
            if exceeded:
                # Frameworks catch a failing body read and answer it themselves (FastAPI: a 400
                # "error parsing the body"); that answer is dropped for the 413 below.
                return
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted_receive, tracked_send)
        except Exception:
            if not exceeded:
                raise
        if exceeded and not started:
            await self._refuse(scope, send)

    async def _refuse(self, scope: Scope, send: Send) -> None:
        err = PayloadTooLarge(f"The request body is larger than {self.limit} bytes.")
        path = scope.get("path", "")
        body = gateway_envelope(err) if uses_gateway_envelope(path) else site_envelope(err, self.base_url)
        payload = json.dumps(body).encode()
        headers = [
            (b"content-type", b"application/json; charset=utf-8"),
            (b"content-length", str(len(payload)).encode()),
        ]
        if path.rstrip("/") == MCP_PATH:  # every answer of the tool-protocol endpoint names its version
            headers.append((b"mcp-version", MCP_PROTOCOL_VERSION.encode()))
        await send({"type": "http.response.start", "status": 413, "headers": headers})
        await send({"type": "http.response.body", "body": payload})


class _TooLarge(Exception):
    pass
