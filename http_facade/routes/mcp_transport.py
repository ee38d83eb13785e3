"""ASGI pieces of ``/api/mcp.php`` around the SDK's transport: the session manager, the body, SSE-only answers."""

from __future__ import annotations

from typing import Any

from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.types import Message, Receive, Send

from agent_server.foundation.settings import Settings
from agent_server.mcp.event_store import build_event_stores
from agent_server.mcp.server import RegistryMCPServer


class SessionManager(StreamableHTTPSessionManager):
    """The SDK's stateful manager over the session server, every session with its own event history.

    The SDK hands one event store to all sessions, whose streams (named by request id) collide; the
    view given to each new session keeps one client's events away from another's replay.
    """

    def __init__(self, server: RegistryMCPServer, settings: Settings, **common: Any) -> None:
        super().__init__(
            app=server.sessions_lowlevel,
            stateless=False,
            json_response=False,  # a session's answers are streams: server requests and notifications ride them
            retry_interval=settings.mcp_sse_retry_ms,
            session_idle_timeout=settings.mcp_session_idle_seconds,
            max_sessions=settings.mcp_max_sessions,
            **common,
        )
        self.event_stores = build_event_stores(
            server.services.kv, settings.mcp_event_history, settings.mcp_session_idle_seconds
        )

    def _admit_session(self, requestor: Any) -> StreamableHTTPServerTransport | None:
        transport = super()._admit_session(requestor)
        if transport is not None and transport.mcp_session_id is not None:
            transport._event_store = self.event_stores.for_session(transport.mcp_session_id)
        return transport


async def read_body(receive: Receive) -> tuple[bytes, Receive]:
    """The whole request body, and a ``receive`` that replays it for the SDK."""
    consumed: list[Message] = []
    body = b""
    while True:
        message = await receive()
        consumed.append(message)
        if message["type"] != "http.request":  # the client went away: the SDK sees it too
            break
        body += message.get("body", b"")
        if not message.get("more_body", False):
            break

    async def replay() -> Message:
        return consumed.pop(0) if consumed else await receive()

    return body, replay


def as_event_stream(send: Send) -> Send:
    """For a client that accepts only ``text/event-stream``: a JSON answer becomes one SSE event.

    Streams pass unchanged; so do errors of the HTTP layer (4xx/5xx) and 202 acknowledgements.
    """
    held: dict[str, Any] = {}
    chunks: list[bytes] = []

    async def converting(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = dict(message.get("headers", []))
            if message["status"] == 200 and headers.get(b"content-type", b"").startswith(b"application/json"):
                held["start"] = message
                return
            await send(message)
            return
        if "start" not in held or message["type"] != "http.response.body":
            await send(message)
            return
        chunks.append(message.get("body", b""))
        if message.get("more_body", False):
            return
        start = held.pop("start")
        kept = [(k, v) for k, v in start.get("headers", []) if k not in (b"content-type", b"content-length")]
        payload = b"event: message\r\ndata: " + b"".join(chunks) + b"\r\n\r\n"
        headers = [
            *kept,
            (b"content-type", b"text/event-stream"),
            (b"cache-control", b"no-cache, no-transform"),
            (b"content-length", str(len(payload)).encode()),
        ]
        await send({**start, "headers": headers})
        await send({"type": "http.response.body", "body": payload})

    return converting
