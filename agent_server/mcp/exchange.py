"""What a tool may do while an MCP request runs it: report progress, log to the client, answer in MCP's shapes.

A registry tool (``async def fn(ctx: ToolContext, ...)``) reaches the SDK's request ``Context`` through
``call_context.current()`` without any MCP type in its signature. Outside an MCP request it is
``None`` and the helpers here do nothing.
"""

from __future__ import annotations

from typing import Any

import anyio
from mcp.server.connection import Connection, allowed_log_levels
from mcp.server.mcpserver import Context
from mcp.server.session import ServerSession
from mcp.types import (
    CallToolResult,
    ErrorData,
    InputRequiredResult,
    LoggingLevel,
    LoggingMessageNotification,
    LoggingMessageNotificationParams,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel

LOG_LEVELS: tuple[LoggingLevel, ...] = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)
# What a session hears before it sends logging/setLevel (the spec leaves the default to the server).
DEFAULT_LOG_LEVEL: LoggingLevel = "info"
LOG_LEVEL_KEY = "agentgate.log_level"  # in Connection.state of a stateful session
LOGGER = "agentgate"


class MCPAnswer(BaseModel):
    """A tool answering in MCP's own terms: content blocks, input requests, or a protocol error.

    MCP returns ``result`` as is (or raises ``error``); other surfaces show this model's JSON.
    """

    result: CallToolResult | InputRequiredResult | None = None
    error: ErrorData | None = None


def connection_of(session: ServerSession) -> Connection:
    """A request's connection: where a stateful session keeps its log level and subscriptions."""
    # The SDK hands handlers the session, not its connection; the connection is the per-client scope.
    return session._connection


async def log(context: Context | None, level: LoggingLevel, data: Any) -> None:
    """Send ``notifications/message`` where the protocol allows it.

    2026-07-28: only at the levels this request opted into (``_meta`` log level). Handshake eras:
    only in a stateful session (stateless connections do not offer logging), at or above the level
    the session set with ``logging/setLevel``.
    """
    if context is None:
        return
    request = context.request_context
    if request.protocol_version in MODERN_PROTOCOL_VERSIONS:
        if level not in allowed_log_levels(request.protocol_version, request.meta):
            return
    else:
        connection = connection_of(request.session)
        if connection.session_id is None:
            return
        threshold = connection.state.get(LOG_LEVEL_KEY, DEFAULT_LOG_LEVEL)
        if LOG_LEVELS.index(level) < LOG_LEVELS.index(threshold):
            return
    notification = LoggingMessageNotification(
        params=LoggingMessageNotificationParams(level=level, data=data, logger=LOGGER)
    )
    await request.session.send_notification(notification, related_request_id=request.request_id)


async def report_progress(
    context: Context | None, progress: float, total: float | None = None, message: str | None = None
) -> None:
    """``notifications/progress`` for the running request; a no-op when the client sent no progress token."""
    if context is not None:
        await context.report_progress(progress, total, message)


class Heartbeat:
    """Progress of a tool whose duration is unknown: a start, a beat per interval, then the end.

    Values only grow (the spec's rule); the total is known only at the end.
    """

    def __init__(self, context: Context | None, label: str, interval: float) -> None:
        self.context, self.label, self.interval = context, label, interval
        self.beats = 0

    async def start(self) -> None:
        await report_progress(self.context, 0, None, f"{self.label}: started")

    async def beat_forever(self) -> None:
        while True:
            await anyio.sleep(self.interval)
            self.beats += 1
            seconds = self.beats * self.interval
            await report_progress(self.context, self.beats, None, f"{self.label}: working ({seconds:g} s)")

    async def finish(self) -> None:
        done = self.beats + 1
        await report_progress(self.context, done, done, f"{self.label}: done")
