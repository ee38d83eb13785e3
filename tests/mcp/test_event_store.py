"""The sessions' event history (SSE resumability), one contract for memory and Redis: what a session
missed is replayed in order, nothing of another session ever is, and the history is bounded."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest
from mcp.server.streamable_http import EventMessage
from mcp.types import JSONRPCNotification

from agent_server.mcp.event_store import MemoryEventStores, RedisEventStores, SessionEventStores
from agent_server.storage.kv import RedisKV

HISTORY = 3


def note(n: int) -> JSONRPCNotification:
    return JSONRPCNotification(
        jsonrpc="2.0", method="notifications/message", params={"level": "info", "data": n}
    )


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.redis)])
async def stores(request: pytest.FixtureRequest) -> AsyncIterator[SessionEventStores]:
    if request.param == "memory":
        yield MemoryEventStores(HISTORY)
        return
    url = request.getfixturevalue("redis_url")
    kv = RedisKV(url, prefix=f"agentgate-test-{uuid.uuid4().hex[:8]}:")
    yield RedisEventStores(kv, HISTORY, ttl=60)
    await kv.close()


async def replay(store: object, last_event_id: str) -> tuple[str | None, list[tuple[str | None, object]]]:
    sent: list[EventMessage] = []

    async def collect(event: EventMessage) -> None:
        sent.append(event)

    stream = await store.replay_events_after(last_event_id, collect)  # type: ignore[attr-defined]
    return stream, [(e.event_id, e.message.params["data"]) for e in sent]  # type: ignore[union-attr]


async def test_a_session_gets_what_it_missed_on_that_stream_only(stores: SessionEventStores) -> None:
    store = stores.for_session("session-a")
    primed = await store.store_event("7", None)  # the priming event of request 7's stream
    first = await store.store_event("7", note(1))
    await store.store_event("_GET_stream", note(100))  # another stream of the same session
    second = await store.store_event("7", note(2))
    assert await replay(store, primed) == ("7", [(first, 1), (second, 2)])
    assert await replay(store, first) == ("7", [(second, 2)])
    assert await replay(store, second) == ("7", [])


async def test_another_session_never_sees_these_events(stores: SessionEventStores) -> None:
    mine = stores.for_session("session-a")
    event_id = await mine.store_event("1", None)
    await mine.store_event("1", note(1))
    theirs = stores.for_session("session-b")
    await theirs.store_event("1", note(2))  # same stream name (request id 1) in another session
    assert await replay(theirs, event_id) == ("1", [])  # the id is mine: nothing of mine is replayed
    assert [data for _, data in (await replay(mine, event_id))[1]] == [1]


async def test_history_is_bounded_and_garbage_ids_replay_nothing(stores: SessionEventStores) -> None:
    store = stores.for_session("session-a")
    start = await store.store_event("1", None)
    for n in range(1, 6):
        await store.store_event("1", note(n))
    _, kept = await replay(store, start)
    assert [data for _, data in kept] == [3, 4, 5]  # the last HISTORY events of the stream
    for garbage in ("", "not-an-id", "12.%%%", "99.bm9wZQ"):
        assert await replay(store, garbage) == (None, [])
