"""The job queue carries job ids only; the ``jobs`` table holds everything else."""

from __future__ import annotations

from typing import Protocol

from agent_server.storage.kv import KV

QUEUE = "jobs"


class JobQueue(Protocol):
    async def enqueue(self, job_id: str) -> None: ...

    async def dequeue(self, timeout: float) -> str | None:
        """The next job id, waiting up to ``timeout`` seconds; None when there is none."""
        ...


class KVJobQueue:
    """A FIFO list in ``services.kv``: in-process by default, shared by every worker on Redis."""

    def __init__(self, kv: KV, name: str = QUEUE) -> None:
        self.kv, self.name = kv, name

    async def enqueue(self, job_id: str) -> None:
        await self.kv.push(self.name, job_id.encode())

    async def dequeue(self, timeout: float) -> str | None:
        item = await self.kv.pop(self.name, timeout)
        return None if item is None else item.decode()
