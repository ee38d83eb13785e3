"""The shared job queue on Redis, with arq: servers enqueue job ids, arq workers run ``JobRunner.run``.

- Enqueue: ``ArqRedis.enqueue_job("run_job", job_id, _job_id=job_id)``. arq refuses a second job
  with the same id while the first is queued or running, so a sweep that re-enqueues an id already
  in the queue adds nothing. Results stay in the ``jobs`` table (``keep_result = 0``): arq keeps no
  result key, so an id can be enqueued again after its run (the runner's claim makes that a no-op
  unless the job was set back to queued).
- Consume: ``ArqConsumer`` runs arq's ``Worker`` (configured by ``WorkerSettings``) in the current
  event loop: inside ``agentgate serve`` (``job_worker=inprocess``) or as ``agentgate worker``.
  arq ends its loop on a Redis error; the consumer starts a new one once Redis answers again, and
  jobs already running finish meanwhile.
- Housekeeping (re-enqueue orphans, purge expired jobs and idempotency records) is an arq cron job,
  unique per tick across every worker of the deployment.
- Delivery is at least once: a worker killed mid-job leaves the job ``running`` in the table; the
  sweep sets it back to ``queued`` after ``job_lease_seconds`` and enqueues it again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from arq.connections import ArqRedis
from arq.constants import in_progress_key_prefix
from arq.cron import cron
from arq.worker import Worker, create_worker, func
from redis.exceptions import RedisError

from agent_server.foundation.settings import Settings
from agent_server.foundation.tasks import run_cancellable, stop_tasks
from agent_server.jobs.runner import JobRunner
from agent_server.storage.kv import KVUnavailable, RedisKV

log = logging.getLogger("agentgate.jobs")
FUNCTION = "run_job"
RESTART_DELAY = 1.0  # seconds between attempts to restart arq's loop while Redis is away


def queue_name(settings: Settings) -> str:
    """One arq queue per deployment: several deployments (or test runs) may share one Redis."""
    return f"{settings.kv_prefix}arq:queue"


async def run_job(ctx: dict[str, Any], job_id: str) -> str | None:
    """The arq task: claim and run one job (a no-op when another worker has it or it finished)."""
    runner: JobRunner = ctx["runner"]
    return await runner.run(job_id, ctx["job_timeout"])


async def housekeeping(ctx: dict[str, Any]) -> None:
    await ctx["housekeeping"]()


class WorkerSettings:
    """arq's settings for agentgate jobs. ``ArqConsumer`` adds the deployment's parts: the Redis
    pool, queue name, concurrency, job timeout, context and the housekeeping schedule."""

    functions = [func(run_job, name=FUNCTION)]
    keep_result = 0  # the jobs table holds results; no arq result key blocks a later re-enqueue
    max_tries = 5  # arq counts a run cancelled by a worker shutdown as a try
    poll_delay = 0.1  # seconds between polls: a job waits at most this long for a free worker
    handle_signals = False  # the process (agentgate serve / worker) owns SIGTERM and SIGINT
    log_results = False  # results can hold user input; the table has them


class ArqJobQueue:
    """``JobQueue`` over arq. Shares RedisKV's bounded pool, timeouts and breaker."""

    def __init__(self, kv: RedisKV, queue: str, *, expires: float) -> None:
        self.kv, self.queue, self.expires = kv, queue, expires
        self.redis = ArqRedis(kv.client.connection_pool, default_queue_name=queue)

    @classmethod
    def for_settings(cls, kv: RedisKV, settings: Settings) -> ArqJobQueue:
        return cls(kv, queue_name(settings), expires=settings.job_ttl_seconds)

    async def enqueue(self, job_id: str) -> None:
        job = await self.kv.guarded(
            self.redis.enqueue_job(
                FUNCTION, job_id, _job_id=job_id, _queue_name=self.queue, _expires=self.expires
            )
        )
        if job is None:
            # arq still has this id: only the sweep re-enqueues ids, and only of jobs idle past the
            # lease, so its arq run died with a killed worker. Drop arq's in-progress marker (it would
            # block a new run until its own expiry) so the next poll starts the job at once; the
            # runner's claim in the table, not this marker, keeps a job from running twice.
            await self.kv.guarded(self.redis.delete(in_progress_key_prefix + job_id))


class ArqConsumer:
    """Runs arq's worker loop until cancelled; restarts it while Redis is unavailable."""

    def __init__(
        self,
        queue: ArqJobQueue,
        runner: JobRunner,
        *,
        concurrency: int,
        job_timeout: float,
        sweep_every: float,
        housekeeping: Callable[[], Awaitable[None]],
    ) -> None:
        self.queue, self.runner, self.concurrency = queue, runner, concurrency
        self.job_timeout, self.sweep_every, self.housekeeping = job_timeout, sweep_every, housekeeping

    def worker(self) -> Worker:
        step = max(1, min(30, round(self.sweep_every)))
        sweep = cron(
            housekeeping,
            name=f"{self.queue.queue}:housekeeping",  # unique per deployment and tick
            second=set(range(0, 60, step)),
            run_at_startup=True,
            timeout=self.job_timeout,
        )
        return create_worker(
            WorkerSettings,
            redis_pool=self.queue.redis,
            queue_name=self.queue.queue,
            max_jobs=self.concurrency,
            # The runner fails a job at job_timeout; arq's own limit is only a backstop.
            job_timeout=self.job_timeout + 5,
            cron_jobs=[sweep],
            ctx={"runner": self.runner, "housekeeping": self.housekeeping, "job_timeout": self.job_timeout},
        )

    async def run(self) -> None:
        """Consume until cancelled; jobs in flight are then cancelled and set back to queued."""
        workers: list[Worker] = []
        try:
            while True:
                worker = self.worker()
                workers.append(worker)
                try:
                    # Returns only by an exception; its Redis calls can drop a cancel (foundation/tasks.py).
                    await run_cancellable(worker.main())
                except (KVUnavailable, RedisError, OSError, TimeoutError) as exc:
                    log.warning("job queue unavailable (%s); retrying", type(exc).__name__)
                except Exception:
                    log.exception("job worker loop failed; restarting it")
                # A loop that failed leaves its running jobs to finish; a new loop takes new ones.
                workers = [w for w in workers if any(not t.done() for t in w.tasks.values())]
                await asyncio.sleep(RESTART_DELAY)
        finally:
            await stop_tasks([t for w in workers for t in w.tasks.values()])
