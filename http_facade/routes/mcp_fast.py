"""The ASGI side of the MCP fast path (``agent_server/mcp/fast.py``).

``MCPEndpoint`` (``routes/mcp.py``) checks Host and Origin and picks JSON or SSE answers first; for a
JSON answer it hands the request here. The gate reads the body, lets the fast path answer, and
otherwise gives the endpoint a ``receive`` that replays what was read, so the SDK gets the request
unchanged.
"""

from __future__ import annotations

import logging

from starlette.types import Message, Receive, Scope, Send

from agent_server.foundation.settings import Settings
from agent_server.mcp.fast import MCPFastPath
from agent_server.mcp.server import RegistryMCPServer
from agent_server.mcp.versions import MCP_PROTOCOL_VERSION

log = logging.getLogger("agentgate.mcp")
VERSION_LINE = (b"mcp-version", MCP_PROTOCOL_VERSION.encode())  # on every answer of the endpoint


class FastPathGate:
    def __init__(self, fast: MCPFastPath) -> None:
        self.fast = fast
        # Counted for tests and for an operator asking how much traffic takes the fast path.
        self.served = 0
        self.deferred = 0

    async def try_answer(self, scope: Scope, receive: Receive, send: Send) -> Receive | None:
        """``None`` once the request is answered; else the ``receive`` the SDK must read it from."""
        consumed: list[Message] = []
        body = b""
        while True:
            message = await receive()
            consumed.append(message)
            if message["type"] != "http.request":  # the client went away: the SDK sees it too
                break
            body += message.get("body", b"")
            if not message.get("more_body", False):
                answer = await self.fast.answer(scope["headers"], body)
                if answer is not None:
                    self.served += 1
                    headers = [*answer.headers, VERSION_LINE]  # as MCPEndpoint's send_with_version
                    await send({"type": "http.response.start", "status": answer.status, "headers": headers})
                    await send({"type": "http.response.body", "body": answer.body})
                    return None
                break
        self.deferred += 1
        return _replay(consumed, receive)


def _replay(consumed: list[Message], receive: Receive) -> Receive:
    pending = list(consumed)

    async def replaying() -> Message:
        return pending.pop(0) if pending else await receive()

    return replaying


def fast_path(server: RegistryMCPServer, settings: Settings) -> FastPathGate | None:
    """The gate, or ``None`` when the setting turns it off or service middleware would be skipped."""
    if not settings.mcp_fast_path:
        return None
    fast = MCPFastPath(server)
    if not fast.enabled:
        log.warning("MCP fast path off: the MCP server has middleware of its own, which only the SDK runs")
        return None
    return FastPathGate(fast)
