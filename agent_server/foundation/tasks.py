"""Stopping background tasks at shutdown without ever hanging on one that will not stop."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable

log = logging.getLogger("agentgate.tasks")
SHUTDOWN_GRACE_SECONDS = 5.0


async def stop_tasks(tasks: Iterable[asyncio.Task], grace: float = SHUTDOWN_GRACE_SECONDS) -> None:
    """Cancel the tasks and wait for them, at most ``grace`` seconds; a straggler is logged, not awaited."""
    pending = [task for task in tasks if not task.done()]
    for task in pending:
        task.cancel()
    if not pending:
        return
    _, stragglers = await asyncio.wait(pending, timeout=grace)
    for task in stragglers:
        log.warning("background task %s did not stop within %.0f s", task.get_name(), grace)


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
