"""The job queue carries job ids only; the ``jobs`` table holds everything else.

With Redis configured the queue is arq's (``arq_queue.py``), shared by every server and worker
process; without it, a list in the in-process ``MemoryKV`` consumed by this process's ``Worker``.
"""

from __future__ import annotations

from typing import Protocol

from agent_server.foundation.settings import Settings
from agent_server.storage.kv import KV, RedisKV

QUEUE = "jobs"


class JobQueue(Protocol):
    async def enqueue(self, job_id: str) -> None: ...


class KVJobQueue:
    """A FIFO list in ``services.kv``: the embedded (single-process) queue."""

    def __init__(self, kv: KV, name: str = QUEUE) -> None:
        self.kv, self.name = kv, name

    async def enqueue(self, job_id: str) -> None:
        await self.kv.push(self.name, job_id.encode())

    async def dequeue(self, timeout: float) -> str | None:
        """The next job id, waiting up to ``timeout`` seconds; None when there is none."""
        item = await self.kv.pop(self.name, timeout)
        return None if item is None else item.decode()


def make_queue(settings: Settings, kv: KV) -> JobQueue:
    """arq on Redis when ``AGENTGATE_REDIS_URL`` is set, else the in-process list."""
    if isinstance(kv, RedisKV):
        from agent_server.jobs.arq_queue import ArqJobQueue  # arq is only needed with Redis

        return ArqJobQueue.for_settings(kv, settings)
    return KVJobQueue(kv)
