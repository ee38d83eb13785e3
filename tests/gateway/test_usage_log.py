"""The durable usage path with Redis: rows are in Redis before the response, drained into the
database in batches, exactly once even when a drainer dies between its INSERT and its trim or two
processes drain at once."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator

import pytest
from sqlalchemy import func, select

from agent_server.gateway.tables import UsageRecord
from agent_server.gateway.usage import DRAIN_LOCK, USAGE_LOG, UsageRow, UsageWriter
from agent_server.storage.db import Database
from agent_server.storage.kv import RedisKV

# The drain lock's expiry has a test of its own; elsewhere it must outlast the first INSERT, which a
# loaded machine has taken more than the default 10 s over (the rows then wait for the next drain).
LOCK_TTL = 600.0


def row(n: int) -> UsageRow:
    return UsageRow("ten_1", f"key_{n % 3}", "m", "chat", 3, n, 1.5, 200, "mock", False, 1_700_000_000.0)


@pytest.fixture
async def redis_log(redis_url: str) -> AsyncIterator[RedisKV]:
    kv = RedisKV(redis_url, prefix=f"agentgate-test-usage:{uuid.uuid4().hex}:")
    yield kv
    await kv.client.delete(kv.prefix + USAGE_LOG, kv.prefix + DRAIN_LOCK)
    await kv.close()


async def stored(db: Database) -> int:
    async with db.session() as session:
        return int((await session.execute(select(func.count()).select_from(UsageRecord))).scalar_one())


async def waiting(kv: RedisKV) -> int:
    return int(await kv.client.llen(kv.prefix + USAGE_LOG))


async def test_rows_are_in_redis_before_the_flush_and_in_the_database_after(
    db: Database, redis_log: RedisKV
) -> None:
    writer = UsageWriter(db, log=redis_log, lock_ttl=LOCK_TTL)
    for n in range(3):
        await writer.append(row(n))
    assert await waiting(redis_log) == 3 and await stored(db) == 0  # a kill -9 now loses nothing
    assert await writer.flush() == 3
    assert await waiting(redis_log) == 0 and await stored(db) == 3


async def test_a_drainer_killed_between_insert_and_trim_does_not_count_twice(
    db: Database, redis_log: RedisKV
) -> None:
    writer = UsageWriter(db, log=redis_log, lock_ttl=LOCK_TTL)
    for n in range(5):
        await writer.append(row(n))
    items = await redis_log.head(USAGE_LOG, 10)
    await writer._insert([UsageRow(*json.loads(item)) for item in items])  # committed, then "killed"
    assert await stored(db) == 5 and await waiting(redis_log) == 5
    await writer.flush()  # the next drainer inserts the same tokens again: no-ops
    assert await stored(db) == 5 and await waiting(redis_log) == 0


async def test_two_processes_draining_at_once_store_each_row_once(db: Database, redis_log: RedisKV) -> None:
    first, second = (UsageWriter(db, log=redis_log, batch=100, lock_ttl=LOCK_TTL) for _ in range(2))
    await asyncio.gather(*((first if n % 2 else second).append(row(n)) for n in range(1200)))
    for _ in range(20):
        await asyncio.gather(first.flush(), second.flush())
        if not await waiting(redis_log):
            break
    assert await stored(db) == 1200 and await waiting(redis_log) == 0


async def test_a_lock_left_by_a_dead_drainer_expires(db: Database, redis_log: RedisKV) -> None:
    writer = UsageWriter(db, log=redis_log)
    await writer.append(row(1))
    await redis_log.set(DRAIN_LOCK, b"a-dead-process", ttl=0.3)
    assert await writer.flush() == 0 and await stored(db) == 0
    await asyncio.sleep(0.4)
    assert await writer.flush() == 1 and await stored(db) == 1


async def test_without_redis_rows_wait_in_process(db: Database) -> None:
    writer = UsageWriter(db)
    await writer.append(row(1))
    assert await stored(db) == 0
    assert await writer.flush() == 1 and await stored(db) == 1
