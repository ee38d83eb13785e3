"""Real servers on loopback for the browser: the app under uvicorn at ``http://localhost:<port>``, and a
proxy that passes server-sent events on in timed pieces.

The app is addressed as ``localhost``, not 127.0.0.1: WebAuthn needs a secure context and a relying
party id that is a domain, and browsers treat ``http://localhost`` as secure.
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import uvicorn
from pydantic import SecretStr

from agent_server.foundation.settings import Settings
from http_facade.app import create_app
from tests.conftest import free_port

# Headers that describe one hop (RFC 9110 7.6.1) or a body length the proxy may change.
HOP_HEADERS = {b"connection", b"keep-alive", b"transfer-encoding", b"content-length", b"upgrade", b"te"}
EVENT_END = re.compile(rb"\r\n\r\n|\n\n|\r\r")


class ThreadedServer:
    """An ASGI app under a real uvicorn on a free loopback port, in a thread of its own."""

    def __init__(self, app: Any, port: int) -> None:
        self.port = port
        self.url = f"http://localhost:{port}"
        config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> ThreadedServer:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def app_server(settings: Settings, *, smtp_url: str | None = None) -> ThreadedServer:
    """The service at ``http://localhost:<free port>``, its passkeys bound to ``localhost``."""
    port = free_port()
    url = f"http://localhost:{port}"
    changes: dict[str, Any] = {
        "public_base_url": url,
        "webauthn_rp_id": "localhost",
        "webauthn_origins": [url],
    }
    if smtp_url is not None:
        changes["smtp_url"] = SecretStr(smtp_url)
    return ThreadedServer(create_app(settings.model_copy(update=changes)), port)


class PacedEventProxy:
    """An ASGI app that forwards every request to ``target`` and passes a ``text/event-stream`` answer
    on one event at a time, ``gap`` seconds apart; everything else passes through as it comes.

    Chromium delivers a small answer that arrives in one burst to the page in one read, so a page that
    renders tokens as they arrive looks the same as one that waits for the end. Spacing the events
    makes the difference visible.
    """

    def __init__(self, target: str, gap: float = 0.15) -> None:
        self.target, self.gap = target.rstrip("/"), gap
        self.client: httpx.AsyncClient | None = None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["type"] == "http":
            await self._forward(scope, receive, send)

    async def _lifespan(self, receive: Any, send: Any) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self.client = httpx.AsyncClient(timeout=30)
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self.client is not None:
                    await self.client.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _forward(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        assert self.client is not None
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = [(k, v) for k, v in scope["headers"] if k not in HOP_HEADERS and k != b"accept-encoding"]
        headers.append((b"accept-encoding", b"identity"))  # plain bytes, so events can be split
        url = (
            self.target
            + scope["raw_path"].decode()
            + (f"?{scope['query_string'].decode()}" if scope["query_string"] else "")
        )
        request = self.client.build_request(scope["method"], url, headers=headers, content=body)
        response = await self.client.send(request, stream=True)
        try:
            out = [(k, v) for k, v in response.headers.raw if k.lower() not in HOP_HEADERS]
            await send({"type": "http.response.start", "status": response.status_code, "headers": out})
            paced = response.headers.get("content-type", "").startswith("text/event-stream")
            async for piece in self._pieces(response, paced):
                await send({"type": "http.response.body", "body": piece, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            await response.aclose()

    async def _pieces(self, response: httpx.Response, paced: bool) -> AsyncIterator[bytes]:
        if not paced:
            async for chunk in response.aiter_raw():
                yield chunk
            return
        buffer = b""
        async for chunk in response.aiter_raw():
            buffer += chunk
            while match := EVENT_END.search(buffer):
                yield buffer[: match.end()]
                buffer = buffer[match.end() :]
                await asyncio.sleep(self.gap)
        if buffer:
            yield buffer


def paced_proxy(target: str, gap: float = 0.15) -> ThreadedServer:
    return ThreadedServer(PacedEventProxy(target, gap), free_port())
