"""Where MCP's change events travel: in the process, or through Redis pub/sub to every worker.

Every worker runs its channel from the start, without the MCP SDK: its content watch (watch.py)
announces changed resources to the other workers even before it serves MCP itself, which loads the
SDK at the first MCP request (http_facade/routes/mcp_on_demand.py). The SDK's servers listen
through ``bus.SDKBus``. With Redis every process, the publisher included, hears an event from the
channel once; if Redis cannot take it, the event still reaches this process.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.lowlevel

from agent_server.capabilities.services import Services
from agent_server.storage.kv import KVUnavailable, RedisKV

log = logging.getLogger("agentgate.mcp")
RESOURCE_UPDATED = "resource_updated"
LIST_CHANGES = ("tools_list_changed", "prompts_list_changed", "resources_list_changed")
RECONNECT_SECONDS = 1.0


@dataclass(frozen=True, slots=True)
class Change:
    """A resource's content changed (``uri``), or a list did (no uri)."""

    kind: str
    uri: str | None = None


Listener = Callable[[Change], None]  # synchronous and must not raise, as the SDK's bus listeners


def encode(change: Change) -> bytes:
    if change.kind == RESOURCE_UPDATED:
        return json.dumps({"kind": change.kind, "uri": change.uri}).encode()
    return json.dumps({"kind": change.kind}).encode()


def decode(raw: bytes | str) -> Change | None:
    try:
        data = json.loads(raw)
        if data["kind"] == RESOURCE_UPDATED:
            return Change(RESOURCE_UPDATED, str(data["uri"]))
        return Change(data["kind"]) if data["kind"] in LIST_CHANGES else None
    except (ValueError, KeyError, TypeError):
        return None


class LocalEvents:
    """In-process fan-out to listeners in subscription order (the SDK's in-memory bus, without it)."""

    def __init__(self) -> None:
        self._listeners: dict[object, Listener] = {}  # a token each: one callable may subscribe twice

    async def publish(self, change: Change) -> None:
        for listener in list(self._listeners.values()):
            try:
                listener(change)
            except Exception:  # one bad listener must not starve the others or fail the publisher
                log.exception("MCP event listener failed on %r", change)
        await anyio.lowlevel.checkpoint()  # a burst lets the listeners' streams drain between events

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        token = object()
        self._listeners[token] = listener

        def unsubscribe() -> None:  # idempotent, as the SDK's bus promises
            self._listeners.pop(token, None)

        return unsubscribe

    @asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        yield


class RedisEvents:
    """Events over one Redis pub/sub channel shared by every worker of the deployment."""

    def __init__(self, kv: RedisKV, url: str, channel: str) -> None:
        self.kv, self.url, self.channel = kv, url, channel
        self.local = LocalEvents()
        self.listening = anyio.Event()  # set once the channel is subscribed (tests wait for it)

    async def publish(self, change: Change) -> None:
        try:
            await self.kv.guarded(self.kv.client.publish(self.channel, encode(change)))
        except KVUnavailable as exc:
            log.warning(
                "MCP event %r not shared through Redis (%s); this process still hears it", change, exc
            )
            await self.local.publish(change)

    def subscribe(self, listener: Listener) -> Callable[[], None]:
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
                        change = decode(message.get("data", b""))
                        if change is not None:
                            await self.local.publish(change)
            except (RedisError, OSError) as exc:
                log.warning("MCP event channel lost (%s); reconnecting in %g s", exc, RECONNECT_SECONDS)
            finally:
                with anyio.CancelScope(shield=True):  # closed even when the app is shutting down
                    await client.aclose()
            await anyio.sleep(RECONNECT_SECONDS)


Events = LocalEvents | RedisEvents


def build_events(services: Services) -> Events:
    settings, kv = services.settings, services.kv
    if settings.redis_url and isinstance(kv, RedisKV):
        return RedisEvents(kv, settings.redis_url, f"{settings.kv_prefix}mcp:events")
    return LocalEvents()
