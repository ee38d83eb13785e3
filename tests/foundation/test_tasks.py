"""Workers stop on the first cancel, even one that arrives as they are woken (foundation/tasks.py).

``asyncio.wait_for(event.wait(), t)`` in Python 3.11 swallows a cancel that lands in the same step
as the event being set; a worker loop built on it ran on through the app's stop.
"""

from __future__ import annotations

import asyncio

from agent_server.foundation.tasks import wait_for_event
from agent_server.storage.kv import MemoryKV


async def _idle_loop(event: asyncio.Event, rounds: list[int]) -> None:
    while True:  # a worker's shape: wait for work or the poll interval, then look again
        rounds.append(1)
        await wait_for_event(event, 60)
        event.clear()


async def test_a_cancel_that_arrives_as_the_event_is_set_stops_the_loop() -> None:
    event, rounds = asyncio.Event(), []
    task = asyncio.create_task(_idle_loop(event, rounds))
    await asyncio.sleep(0.01)
    event.set()
    task.cancel()
    await asyncio.sleep(0.01)
    assert task.cancelled() and len(rounds) == 1


async def test_the_wait_says_whether_the_event_came_or_the_time_ran_out() -> None:
    event = asyncio.Event()
    assert await wait_for_event(event, 0.01) is False
    asyncio.get_running_loop().call_soon(event.set)
    assert await wait_for_event(event, 60) is True


async def test_a_blocking_pop_cancelled_as_an_item_arrives_is_cancelled() -> None:
    kv = MemoryKV()
    popping = asyncio.create_task(kv.pop("jobs", timeout=60))
    await asyncio.sleep(0.01)
    await kv.push("jobs", b"job-1")
    popping.cancel()
    await asyncio.sleep(0.01)
    assert popping.cancelled()
    assert await kv.pop("jobs") == b"job-1"  # the item stays for the next worker
