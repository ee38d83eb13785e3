"""Stopping background tasks at shutdown without ever hanging on one that will not stop."""

from __future__ import annotations

import asyncio
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
