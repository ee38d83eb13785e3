"""Without Redis, a request whose usage row finds ``high_water`` rows waiting (or being written)
waits for the writer's batch, so a load the writer cannot keep up with neither grows the worker's
memory nor drops rows; while the database fails nobody waits (agent_server/gateway/usage.py)."""

from __future__ import annotations

import asyncio
from typing import Any

from sqlalchemy import func, select

from agent_server.gateway.tables import UsageRecord
from agent_server.gateway.usage import UsageRow, UsageWriter
from agent_server.storage.db import Database


def row(n: int) -> UsageRow:
    return UsageRow("ten_1", "key_1", "m", "chat", 3, n, 1.5, 200, "mock", False, 1_700_000_000.0 + n)


async def stored(db: Database) -> int:
    async with db.session() as session:
        return int((await session.execute(select(func.count()).select_from(UsageRecord))).scalar_one())


class GatedWriter(UsageWriter):
    """The real writer whose inserts wait for the test to open a gate: a slow database."""

    def __init__(self, db: Database, **options: Any) -> None:
        super().__init__(db, interval=60.0, **options)  # no timed flush: only a full list wakes it
        self.gate = asyncio.Event()

    async def _insert(self, rows: list[UsageRow]) -> None:
        await self.gate.wait()
        await super()._insert(rows)


async def test_a_row_beyond_high_water_waits_for_the_batch_then_nothing_is_lost(db: Database) -> None:
    writer = GatedWriter(db, batch=3, high_water=3)
    await writer.start()
    for n in range(3):
        await writer.append(row(n))  # the third wakes the writer, whose insert waits at the gate
    late = asyncio.create_task(writer.append(row(3)))
    await asyncio.sleep(0.05)
    assert not late.done()  # three rows in the insert: the fourth request waits
    writer.gate.set()
    await asyncio.wait_for(late, 5)
    await writer.stop()
    assert await stored(db) == 4 and writer.dropped == 0


async def test_below_high_water_nobody_waits(db: Database) -> None:
    writer = GatedWriter(db, batch=100, high_water=10)
    await writer.start()
    await asyncio.wait_for(asyncio.gather(*(writer.append(row(n)) for n in range(9))), 1)
    writer.gate.set()
    await writer.stop()
    assert await stored(db) == 9


class FailingWriter(UsageWriter):
    async def _insert(self, rows: list[UsageRow]) -> None:
        raise ConnectionError("the database is away")


async def test_while_the_database_fails_requests_go_on_and_the_list_stays_bounded(db: Database) -> None:
    writer = FailingWriter(db, interval=0.01, batch=2, high_water=2, max_pending=5)
    await writer.start()
    await writer.append(row(0))
    await writer.append(row(1))
    await asyncio.sleep(0.1)  # a failed flush: the writer is failing, the rows are back in the list
    await asyncio.wait_for(asyncio.gather(*(writer.append(row(n)) for n in range(2, 10))), 2)
    assert len(writer._pending) == 5 and writer.dropped == 5
    await writer.stop()  # its final flush fails too: logged, the app still stops
