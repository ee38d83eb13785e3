"""Workers stop on the first cancel, even one that arrives as they are woken, and the app's stop
cancels again a task whose library swallowed the first (foundation/tasks.py).

``asyncio.wait_for(event.wait(), t)`` in Python 3.11 swallows a cancel that lands in the same step
as the event being set; a worker loop built on it ran on through the app's stop. redis-py sends
every command through ``asyncio.wait_for``, so arq's polling loop could swallow one too.
"""

from __future__ import annotations

import asyncio

import pytest

from agent_server.foundation.tasks import run_cancellable, stop_tasks, wait_for_event
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


async def _swallows_the_first_cancel(rounds: list[int]) -> None:
    swallowed = False
    while True:  # a polling loop whose library dropped one cancel, as wait_for does on Python 3.11
        try:
            await asyncio.sleep(0.01)
        except asyncio.CancelledError:
            if swallowed:
                raise
            swallowed = True
        rounds.append(1)


async def test_a_task_that_swallowed_the_cancel_is_cancelled_again_after_the_grace() -> None:
    rounds: list[int] = []
    task = asyncio.create_task(_swallows_the_first_cancel(rounds))
    await asyncio.sleep(0.02)
    try:
        await stop_tasks([task], grace=0.1, second_grace=5)
        assert task.cancelled()
        assert len(rounds) > 2  # it ran on after the first cancel, until the second
    finally:
        task.cancel()  # without the second cancel it runs on: end it here, not in the loop's close


async def test_a_task_that_honours_the_cancel_finishes_its_clean_up_undisturbed() -> None:
    cleaned: list[asyncio.Task] = []

    async def cleans_up() -> None:
        try:
            await asyncio.sleep(60)
        finally:
            await asyncio.sleep(0.05)  # e.g. handing a job back: needs the loop, not a second cancel
            task = asyncio.current_task()
            assert task is not None and task.cancelling() == 1
            cleaned.append(task)

    task = asyncio.create_task(cleans_up())
    await asyncio.sleep(0.01)
    await stop_tasks([task], grace=5)
    assert task.cancelled() and cleaned == [task]


async def test_a_cancel_of_the_caller_ends_a_step_that_drops_cancels_at_once() -> None:
    rounds: list[int] = []
    caller = asyncio.create_task(run_cancellable(_swallows_the_first_cancel(rounds)))
    await asyncio.sleep(0.02)
    caller.cancel()
    done, _ = await asyncio.wait({caller}, timeout=1)  # stop_tasks' grace would be 5 s
    assert caller in done and caller.cancelled()
    ran = len(rounds)
    await asyncio.sleep(0.05)
    assert len(rounds) == ran  # the step's loop ended with the caller


async def test_the_step_s_result_and_errors_reach_the_caller() -> None:
    async def answer() -> int:
        await asyncio.sleep(0)
        return 42

    async def fails() -> None:
        await asyncio.sleep(0)
        raise ConnectionError("redis went away")

    assert await run_cancellable(answer()) == 42
    with pytest.raises(ConnectionError, match="redis went away"):
        await run_cancellable(fails())
