"""Where resource-change events travel: in the process, or through Redis pub/sub to every worker.

Both buses implement the SDK's ``SubscriptionBus`` (``publish`` and ``subscribe``): the SDK's
``subscriptions/listen`` streams (2026-07-28) and our ``resources/subscribe`` sessions
(``sessions.py``) listen on the same bus. With Redis every process, the publisher included, hears
an event from the channel once; if Redis cannot take it, the event still reaches this process.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
from mcp.server.subscriptions import InMemorySubscriptionBus
from mcp.shared.subscriptions import (
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ServerEvent,
    ToolsListChanged,
)

from agent_server.capabilities.services import Services
from agent_server.storage.kv import KVUnavailable, RedisKV

log = logging.getLogger("agentgate.mcp")
_KINDS: dict[str, ServerEvent] = {
    "tools_list_changed": ToolsListChanged(),
    "prompts_list_changed": PromptsListChanged(),
    "resources_list_changed": ResourcesListChanged(),
}
RECONNECT_SECONDS = 1.0


def encode(event: ServerEvent) -> bytes:
    if isinstance(event, ResourceUpdated):
        return json.dumps({"kind": "resource_updated", "uri": event.uri}).encode()
    kind = next(name for name, known in _KINDS.items() if known == event)
    return json.dumps({"kind": kind}).encode()


def decode(raw: bytes | str) -> ServerEvent | None:
    try:
        data = json.loads(raw)
        if data["kind"] == "resource_updated":
            return ResourceUpdated(uri=str(data["uri"]))
        return _KINDS[data["kind"]]
    except (ValueError, KeyError, TypeError):
        return None


class LocalBus(InMemorySubscriptionBus):
    """The SDK's in-process bus, with the lifecycle every bus here has."""

    @asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        yield


class RedisBus:
    """A ``SubscriptionBus`` over one Redis pub/sub channel shared by every worker of the deployment."""

    def __init__(self, kv: RedisKV, url: str, channel: str) -> None:
        self.kv, self.url, self.channel = kv, url, channel
        self.local = InMemorySubscriptionBus()
        self.listening = anyio.Event()  # set once the channel is subscribed (tests wait for it)

    async def publish(self, event: ServerEvent) -> None:
        try:
            await self.kv.guarded(self.kv.client.publish(self.channel, encode(event)))
        except KVUnavailable as exc:
            log.warning("MCP event %r not shared through Redis (%s); this process still hears it", event, exc)
            await self.local.publish(event)

    def subscribe(self, listener: Callable[[ServerEvent], None]) -> Callable[[], None]:
        return self.local.subscribe(listener)

    @asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(self._listen_forever)
            yield
            tasks.cancel_scope.cancel()

    async def _listen_forever(self) -> None:
        import redis.asyncio as redis
        from redis.exceptions import RedisError

        while True:
            # Its own connection without a read timeout: a subscriber waits for as long as it takes.
            client: Any = redis.from_url(self.url, socket_connect_timeout=self.kv.timeout)
            try:
                async with client.pubsub(ignore_subscribe_messages=True) as pubsub:
                    await pubsub.subscribe(self.channel)
                    self.listening.set()
                    async for message in pubsub.listen():
                        event = decode(message.get("data", b""))
                        if event is not None:
                            await self.local.publish(event)
            except (RedisError, OSError) as exc:
                log.warning("MCP event channel lost (%s); reconnecting in %g s", exc, RECONNECT_SECONDS)
            finally:
                with anyio.CancelScope(shield=True):  # closed even when the app is shutting down
                    await client.aclose()
            await anyio.sleep(RECONNECT_SECONDS)


def build_bus(services: Services) -> LocalBus | RedisBus:
    settings, kv = services.settings, services.kv
    if settings.redis_url and isinstance(kv, RedisKV):
        return RedisBus(kv, settings.redis_url, f"{settings.kv_prefix}mcp:events")
    return LocalBus()
