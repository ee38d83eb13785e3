"""Stopping background tasks at shutdown without ever hanging on one that will not stop."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Coroutine, Iterable
from typing import Any, TypeVar

log = logging.getLogger("agentgate.tasks")
SHUTDOWN_GRACE_SECONDS = 5.0
SECOND_CANCEL_GRACE_SECONDS = 1.0
RECANCEL_SECONDS = 0.05  # how often run_cancellable repeats a cancel until its task ends
T = TypeVar("T")


async def stop_tasks(
    tasks: Iterable[asyncio.Task],
    grace: float = SHUTDOWN_GRACE_SECONDS,
    second_grace: float = SECOND_CANCEL_GRACE_SECONDS,
) -> None:
    """Cancel the tasks and wait for them, at most ``grace`` seconds; a task still running then is
    cancelled once more and waited for ``second_grace`` seconds, and one still running after that is
    logged, not awaited.

    The second cancel is for a task whose library swallowed the first: redis-py sends every command
    through ``asyncio.wait_for``, which in Python 3.11 returns the result of a send that finished in
    the same loop step as the cancel, and drops the cancel. arq's polling loop then ran on past the
    app's stop (and a test's loop never closed). A task that honours a cancel ends within the grace
    and never sees the second one.
    """
    pending = {task for task in tasks if not task.done()}
    for task in pending:
        task.cancel()
    if not pending:
        return
    _, pending = await asyncio.wait(pending, timeout=grace)
    if not pending:
        return
    for task in pending:
        log.warning(
            "background task %s did not stop within %.0f s; cancelling it again", task.get_name(), grace
        )
        task.cancel()
    _, pending = await asyncio.wait(pending, timeout=second_grace)
    for task in pending:
        log.warning("background task %s did not stop on a second cancel; left running", task.get_name())


async def wait_for_event(event: asyncio.Event, timeout: float) -> bool:
    """Wait until ``event`` is set or ``timeout`` seconds pass; True when it is set.

    For the workers' idle waits instead of ``asyncio.wait_for(event.wait(), timeout)``, which in
    Python 3.11 swallows a cancel that arrives as the event is set: the worker's loop then ran on
    through the app's stop, past ``stop_tasks``' grace. ``asyncio.timeout`` never swallows a cancel.
    """
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(timeout):
            await event.wait()
    return event.is_set()


async def run_cancellable(step: Coroutine[Any, Any, T]) -> T:
    """Run ``step`` in a task of its own, which a cancel of the caller ends for certain: the cancel
    is repeated until the task is done.

    For a library's loop that can drop a cancel and keeps no state of its own to clean up: arq's
    polling loop sends Redis commands through redis-py's ``asyncio.wait_for``, and dropped the
    app's stop in half the runs of a busy test (then ``stop_tasks`` waited out its grace).
    """
    task = asyncio.ensure_future(step)
    try:
        await asyncio.wait({task})  # a wait on the task's end: a cancel of the caller cannot be lost
    except asyncio.CancelledError:
        while not task.done():
            task.cancel()
            await asyncio.wait({task}, timeout=RECANCEL_SECONDS)
        raise
    return task.result()
