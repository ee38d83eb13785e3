"""SSE resumability for stateful MCP sessions: every event a session's streams carry, kept for a while.

A client whose stream broke reconnects with ``Last-Event-ID`` and gets what it missed. The SDK hands
one store to every session and names streams by request id, which repeats across sessions; so each
session gets its own view (``for_session``) and an event id names its stream: ``<seq>.<stream>``.
Kept in process memory, or in Redis when configured (a list per stream, trimmed, with a TTL).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections import deque
from itertools import count
from typing import Protocol

from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId
from mcp.types import JSONRPCMessage, jsonrpc_message_adapter

from agent_server.storage.kv import KV, RedisKV


def _event_id(seq: int, stream_id: StreamId) -> EventId:
    return f"{seq}.{base64.urlsafe_b64encode(stream_id.encode()).decode()}"


def _parse(event_id: EventId) -> tuple[int, StreamId] | None:
    seq, _, stream = event_id.partition(".")
    try:
        return int(seq), base64.urlsafe_b64decode(stream.encode()).decode()
    except (ValueError, binascii.Error, UnicodeDecodeError):
        return None


def _dump(message: JSONRPCMessage | None) -> str | None:
    return None if message is None else message.model_dump_json(by_alias=True, exclude_none=True)


class SessionEventStores(Protocol):
    def for_session(self, session_id: str) -> EventStore: ...


class MemoryEvents(EventStore):
    """One session's events in memory: the last ``history`` of each stream."""

    def __init__(self, history: int) -> None:
        self.history = history
        self._seq = count(1)
        self._streams: dict[StreamId, deque[tuple[int, str | None]]] = {}

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        seq = next(self._seq)
        self._streams.setdefault(stream_id, deque(maxlen=self.history)).append((seq, _dump(message)))
        return _event_id(seq, stream_id)

    async def replay_events_after(
        self, last_event_id: EventId, send_callback: EventCallback
    ) -> StreamId | None:
        parsed = _parse(last_event_id)
        if parsed is None or parsed[1] not in self._streams:
            return None
        last, stream_id = parsed
        for seq, raw in list(self._streams[stream_id]):
            if seq > last and raw is not None:  # None: a priming event, nothing to resend
                message = jsonrpc_message_adapter.validate_json(raw)
                await send_callback(EventMessage(message, _event_id(seq, stream_id)))
        return stream_id


class MemoryEventStores:
    def __init__(self, history: int) -> None:
        self.history = history

    def for_session(self, session_id: str) -> EventStore:
        return MemoryEvents(self.history)  # lives as long as the session's transport holds it


class RedisEvents(EventStore):
    """One session's events in Redis: ``<prefix>mcp:events:<session>:<stream>`` lists with a TTL."""

    def __init__(self, kv: RedisKV, session_id: str, history: int, ttl: float) -> None:
        self.kv, self.history, self.ttl_ms = kv, history, int(ttl * 1000)
        self.base = f"{kv.prefix}mcp:events:{session_id}"

    def _key(self, stream_id: StreamId) -> str:
        return f"{self.base}:{base64.urlsafe_b64encode(stream_id.encode()).decode()}"

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        client = self.kv.client
        seq = await self.kv.guarded(client.incr(f"{self.base}:seq"))
        key = self._key(stream_id)
        entry = json.dumps({"n": seq, "m": _dump(message)})
        async with client.pipeline(transaction=True) as pipe:
            pipe.rpush(key, entry).ltrim(key, -self.history, -1).pexpire(key, self.ttl_ms)
            pipe.pexpire(f"{self.base}:seq", self.ttl_ms)
            await self.kv.guarded(pipe.execute())
        return _event_id(seq, stream_id)

    async def replay_events_after(
        self, last_event_id: EventId, send_callback: EventCallback
    ) -> StreamId | None:
        parsed = _parse(last_event_id)
        if parsed is None:
            return None
        last, stream_id = parsed
        entries = await self.kv.guarded(self.kv.client.lrange(self._key(stream_id), 0, -1))
        if not entries:
            return None
        for raw in entries:
            entry = json.loads(raw)
            if entry["n"] > last and entry["m"] is not None:
                message = jsonrpc_message_adapter.validate_json(entry["m"])
                await send_callback(EventMessage(message, _event_id(entry["n"], stream_id)))
        return stream_id


class RedisEventStores:
    def __init__(self, kv: RedisKV, history: int, ttl: float) -> None:
        self.kv, self.history, self.ttl = kv, history, ttl

    def for_session(self, session_id: str) -> EventStore:
        return RedisEvents(self.kv, session_id, self.history, self.ttl)


def build_event_stores(kv: KV, history: int, ttl: float) -> SessionEventStores:
    return RedisEventStores(kv, history, ttl) if isinstance(kv, RedisKV) else MemoryEventStores(history)
