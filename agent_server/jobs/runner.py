"""Runs one job: claim it, execute its type's handler, record the result or the error envelope."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from agent_server.foundation.errors import AgentError, TimedOut, site_envelope
from agent_server.jobs.store import CANCELLED, FAILED, SUCCEEDED, JobStore

log = logging.getLogger("agentgate.jobs")
Handler = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


class JobRunner:
    def __init__(self, store: JobStore, handlers: dict[str, Handler], base_url: str) -> None:
        self.store, self.handlers, self.base_url = store, handlers, base_url
        self._running: dict[str, asyncio.Task[dict[str, Any]]] = {}

    async def run(self, job_id: str, timeout: float | None = None) -> str | None:
        """Execute the job if it is still queued; returns its final status, None if not run here.

        Safe to call twice for one id (a duplicate queue entry): only one call claims the job.
        A job still running after ``timeout`` seconds (the lease, after which the sweep would take
        it for orphaned) fails with ``timeout``.
        """
        job = await self.store.claim(job_id)
        if job is None:
            return None
        # The handler runs in a task of its own so that cancelling the job stops it without
        # cancelling this worker slot.
        work = asyncio.create_task(self.handlers[job.type](job.input))
        self._running[job_id] = work
        try:
            await asyncio.wait({work}, timeout=timeout)
        finally:
            self._running.pop(job_id, None)
            if not work.done() and _cancelling():  # the worker is shutting down: hand the job back
                work.cancel()
                await asyncio.shield(self._hand_back(job_id))
        if not work.done():
            work.cancel()
            error = TimedOut(f"The {job.type} job did not finish within {timeout:g} s.")
            await self.store.finish(job_id, error=site_envelope(error, self.base_url))
            return FAILED
        if work.cancelled():
            return CANCELLED  # the cancel operation already recorded the state
        exc = work.exception()
        if exc is None:
            await self.store.finish(job_id, result=work.result())
            return SUCCEEDED
        if not isinstance(exc, AgentError):
            log.error("job %s (%s) crashed", job_id, job.type, exc_info=exc)
            exc = AgentError(f"The {job.type} job failed unexpectedly.")
        await self.store.finish(job_id, error=site_envelope(exc, self.base_url))
        return FAILED

    async def _hand_back(self, job_id: str) -> None:
        """running -> queued, so the next worker (or the next start) runs the job at once."""
        try:
            await self.store.requeue(job_id)
        except Exception:  # e.g. the database is away too: the lease sweep recovers the job later
            log.warning("could not hand job %s back; it is recovered after the lease", job_id)

    def cancel_local(self, job_id: str) -> None:
        """Stop the job's handler if it runs in this process (other processes drop its result)."""
        work = self._running.get(job_id)
        if work is not None:
            work.cancel()


def _cancelling() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0
