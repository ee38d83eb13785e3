"""The in-process consumer (no Redis): takes job ids from the in-memory queue and runs up to
``concurrency`` at once. With Redis, arq's worker takes its place (``arq_queue.py``)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from agent_server.foundation.tasks import stop_tasks
from agent_server.jobs.queue import KVJobQueue
from agent_server.jobs.runner import JobRunner

log = logging.getLogger("agentgate.jobs")


class Worker:
    def __init__(
        self,
        queue: KVJobQueue,
        runner: JobRunner,
        *,
        concurrency: int,
        housekeeping: Callable[[], Awaitable[None]] | None = None,
        sweep_every: float = 60.0,
        poll_timeout: float = 1.0,
        job_timeout: float | None = None,
    ) -> None:
        self.queue, self.runner, self.housekeeping = queue, runner, housekeeping
        self.sweep_every, self.poll_timeout, self.job_timeout = sweep_every, poll_timeout, job_timeout
        self._slots = asyncio.Semaphore(concurrency)

    async def run(self) -> None:
        """Consume until cancelled; on cancellation the jobs in flight are cancelled too (they stay
        ``running`` in the table and are recovered by the next start)."""
        tasks: set[asyncio.Task[None]] = set()
        next_sweep = time.monotonic()
        try:
            while True:
                if self.housekeeping is not None and time.monotonic() >= next_sweep:
                    next_sweep = time.monotonic() + self.sweep_every
                    await self._safely(self.housekeeping)
                await self._slots.acquire()
                try:
                    job_id = await self.queue.dequeue(self.poll_timeout)
                except Exception as exc:  # e.g. Redis away: wait and poll again, lose nothing
                    self._slots.release()
                    log.warning("job queue unavailable: %s", type(exc).__name__)
                    await asyncio.sleep(self.poll_timeout)
                    continue
                if job_id is None:
                    self._slots.release()
                    continue
                task = asyncio.create_task(self._run(job_id))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
        finally:
            await stop_tasks(tasks)

    async def _run(self, job_id: str) -> None:
        try:
            await self._safely(lambda: self.runner.run(job_id, self.job_timeout))
        finally:
            self._slots.release()

    @staticmethod
    async def _safely(step: Callable[[], Awaitable[object]]) -> None:
        try:
            await step()
        except asyncio.CancelledError:
            raise
        except Exception:
            # A database hiccup must not kill the loop; the job is recovered by a later sweep.
            log.exception("job worker step failed")
