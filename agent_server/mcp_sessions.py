"""Stateful MCP sessions (opt-in, ``AGENTGATE_MCP_SESSIONS``): what only a session can offer.

A session (opened by ``initialize`` when sessions are on) keeps a connection between requests, so the
server may speak first: ``logging/setLevel`` sets what its log notifications carry, and
``resources/subscribe`` delivers ``notifications/resources/updated`` on its standalone SSE stream
(``GET`` with the session id) when the content behind a URI changes. The stateless server declares
none of this, so its capabilities stay honest; the session server is the same handlers plus these.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectSendStream
from mcp.server.connection import Connection
from mcp.server.lowlevel import Server
from mcp.server.subscriptions import SubscriptionBus
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ResourceUpdated, ServerEvent
from mcp.types import (
    INVALID_PARAMS,
    EmptyResult,
    SetLevelRequestParams,
    SubscribeRequestParams,
    UnsubscribeRequestParams,
)

from agent_server.capabilities.registry import Registry
from agent_server.mcp.exchange import LOG_LEVEL_KEY, connection_of

log = logging.getLogger("agentgate.mcp")
SUBSCRIPTIONS_KEY = "agentgate.subscriptions"  # in Connection.state: the URIs a session follows
# The requests both servers answer alike (the session server adds its own three).
SHARED_METHODS = (
    "ping",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "subscriptions/listen",
)
PENDING_NOTIFICATIONS = 1024


class SessionHub:
    """Sessions' log levels and subscriptions, and the delivery of bus events to subscribed sessions."""

    def __init__(self, registry: Registry, bus: SubscriptionBus) -> None:
        self.registry, self.bus = registry, bus
        self._followers: dict[str, dict[int, Connection]] = {}  # uri -> sessions following it
        self._outbox: MemoryObjectSendStream[tuple[Connection, str]] | None = None

    def followers(self, uri: str) -> int:
        return len(self._followers.get(uri, {}))

    async def set_level(self, ctx: Any, params: SetLevelRequestParams) -> EmptyResult:
        connection_of(ctx.session).state[LOG_LEVEL_KEY] = params.level
        return EmptyResult()

    async def subscribe(self, ctx: Any, params: SubscribeRequestParams) -> EmptyResult:
        uri = str(params.uri)
        if not self._exists(uri):
            raise MCPError(
                INVALID_PARAMS, f"Unknown resource '{uri}': nothing to subscribe to.", {"uri": uri}
            )
        connection: Connection = connection_of(ctx.session)
        followed: set[str] | None = connection.state.get(SUBSCRIPTIONS_KEY)
        if followed is None:
            followed = connection.state[SUBSCRIPTIONS_KEY] = set()
            connection.exit_stack.callback(self._forget, connection)  # when the session ends
        followed.add(uri)
        self._followers.setdefault(uri, {})[id(connection)] = connection
        return EmptyResult()

    async def unsubscribe(self, ctx: Any, params: UnsubscribeRequestParams) -> EmptyResult:
        uri = str(params.uri)
        connection: Connection = connection_of(ctx.session)
        connection.state.get(SUBSCRIPTIONS_KEY, set()).discard(uri)
        self._unfollow(uri, connection)
        return EmptyResult()

    def _exists(self, uri: str) -> bool:
        return any(r.uri == uri for r in self.registry.resources) or any(
            t.match(uri) is not None for t in self.registry.templates
        )

    def _unfollow(self, uri: str, connection: Connection) -> None:
        following = self._followers.get(uri, {})
        following.pop(id(connection), None)
        if not following:
            self._followers.pop(uri, None)

    def _forget(self, connection: Connection) -> None:
        for uri in connection.state.get(SUBSCRIPTIONS_KEY, set()):
            self._unfollow(uri, connection)

    def _on_event(self, event: ServerEvent) -> None:
        """A bus listener (synchronous, must not raise): queue one notification per following session."""
        if not isinstance(event, ResourceUpdated) or self._outbox is None:
            return
        for connection in list(self._followers.get(event.uri, {}).values()):
            try:
                self._outbox.send_nowait((connection, event.uri))
            except anyio.WouldBlock:
                log.warning("MCP notification for %s dropped: too many pending", event.uri)

    @asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        send, receive = anyio.create_memory_object_stream[tuple[Connection, str]](PENDING_NOTIFICATIONS)
        self._outbox = send
        unsubscribe = self.bus.subscribe(self._on_event)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(self._deliver, receive)
            try:
                yield
            finally:
                unsubscribe()
                self._outbox = None
                send.close()
                tasks.cancel_scope.cancel()

    async def _deliver(self, pending: Any) -> None:
        async with pending:
            async for connection, uri in pending:
                try:  # on the session's standalone stream, or stored for it when it is not open
                    await connection.send_resource_updated(uri)
                except Exception:  # a session that ended meanwhile must not stop the others
                    log.debug("resources/updated for %s not delivered", uri, exc_info=True)


def sessions_server(base: Server, hub: SessionHub) -> Server:
    """A low-level server answering like ``base`` plus logging and resource subscriptions."""
    server = Server(
        base.name,
        version=base.version,
        title=base.title,
        description=base.description,
        instructions=base.instructions,
        website_url=base.website_url,
        icons=base.icons,
        cache_hints=base.cache_hints,  # type: ignore[arg-type]
        get_tool_input_schema=base.get_tool_input_schema,
    )
    for method in SHARED_METHODS:
        entry = base.get_request_handler(method)
        if entry is not None:
            server.add_request_handler(method, entry.params_type, entry.handler)
    server.add_request_handler("logging/setLevel", SetLevelRequestParams, hub.set_level)
    server.add_request_handler("resources/subscribe", SubscribeRequestParams, hub.subscribe)
    server.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, hub.unsubscribe)
    server.middleware = list(base.middleware)  # tracing and the request-state seal, as the base has
    return server
