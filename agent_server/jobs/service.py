"""What routes and the lifespan call: submit, get, cancel, recover, sweep."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from agent_server.foundation.timeutil import utc
from agent_server.jobs.queue import JobQueue, KVJobQueue
from agent_server.jobs.runner import JobRunner
from agent_server.jobs.store import JobStore
from agent_server.jobs.types import JobTypes
from agent_server.jobs.worker import Worker
from agent_server.storage.kv import KVUnavailable
from agent_server.storage.records import JobRecord

log = logging.getLogger("agentgate.jobs")


class Consumer(Protocol):
    async def run(self) -> None:
        """Take and run jobs until cancelled."""
        ...


class Jobs:
    def __init__(
        self, store: JobStore, queue: JobQueue, runner: JobRunner, types: JobTypes, *, lease: float
    ) -> None:
        self.store, self.queue, self.runner, self.types, self.lease = store, queue, runner, types, lease

    async def submit(self, job_type: str, job_input: dict[str, Any]) -> JobRecord:
        self.types.validate(job_type, job_input)
        job = await self.store.create(job_type, job_input)
        try:
            await self.queue.enqueue(job.id)
        except Exception as exc:
            # The record is durable; the sweep re-enqueues it once the queue is back. A Redis outage
            # is logged once by RedisKV's breaker, not once per job.
            level = logging.DEBUG if isinstance(exc, KVUnavailable) else logging.WARNING
            log.log(level, "enqueue of %s failed (%s); it will be re-enqueued", job.id, type(exc).__name__)
        return job

    async def get(self, job_id: str) -> JobRecord:
        return await self.store.get(job_id)

    async def cancel(self, job_id: str) -> JobRecord:
        job = await self.store.cancel(job_id)
        self.runner.cancel_local(job_id)
        return job

    async def recover(self, *, sole_worker: bool) -> list[str]:
        """Re-enqueue unfinished jobs whose worker is gone.

        With ``sole_worker`` (in-process queue: no other process can hold a job) every unfinished
        job is an orphan; with a shared queue only jobs idle for longer than the lease are.
        """
        now = self.store.clock.now()
        ids = await self.store.orphans(utc(now if sole_worker else now - self.lease))
        for done, job_id in enumerate(ids):
            try:
                await self.queue.enqueue(job_id)
            except Exception as exc:  # queue away: the rest stay queued and the next sweep retries
                log.warning("re-enqueue stopped after %d of %d jobs (%s)", done, len(ids), type(exc).__name__)
                return ids[:done]
        if ids:
            log.info("re-enqueued %d unfinished job(s)", len(ids))
        return ids

    def worker(self, concurrency: int, *extra_housekeeping: Callable[[], Awaitable[object]]) -> Consumer:
        """The consumer of this queue: arq's worker on Redis, else the in-process ``Worker``."""

        async def housekeeping() -> None:
            await self.recover(sole_worker=False)
            await self.store.purge()
            for step in extra_housekeeping:
                await step()

        if isinstance(self.queue, KVJobQueue):
            return Worker(
                self.queue,
                self.runner,
                concurrency=concurrency,
                housekeeping=housekeeping,
                job_timeout=self.lease,  # past the lease the sweep would run the job a second time
            )
        from agent_server.jobs.arq_queue import ArqConsumer, ArqJobQueue

        assert isinstance(self.queue, ArqJobQueue)
        return ArqConsumer(
            self.queue,
            self.runner,
            concurrency=concurrency,
            job_timeout=self.lease,  # past the lease the sweep would run the job a second time
            sweep_every=min(60.0, max(1.0, self.lease / 4)),
            housekeeping=housekeeping,
        )
