"""Durable job records. Each transition is one conditional UPDATE, atomic across processes."""

from __future__ import annotations

import secrets
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, update
from sqlmodel import col, select

from agent_server.foundation.clock import Clock
from agent_server.foundation.errors import Conflict, NotFound
from agent_server.foundation.timeutil import iso, utc
from agent_server.storage.db import Database
from agent_server.storage.records import JobRecord

QUEUED, RUNNING, SUCCEEDED, FAILED, CANCELLED = "queued", "running", "succeeded", "failed", "cancelled"
UNFINISHED = (QUEUED, RUNNING)
POLL_PATH = "/api/jobs?id="


def new_job_id() -> str:
    return f"job_{secrets.token_hex(16)}"


def job_view(job: JobRecord) -> dict[str, Any]:
    """The public JSON of a job (docs/public-api.md, "Jobs")."""
    view: dict[str, Any] = {
        "job_id": job.id,
        "type": job.type,
        "status": job.status,
        "poll_url": POLL_PATH + job.id,
        "input": job.input,
        "created_at": iso(job.created_at),
        "updated_at": iso(job.updated_at),
        "expires_at": iso(job.expires_at),
    }
    if job.status == SUCCEEDED:
        view["result"] = job.result
    if job.status == FAILED:
        view["error"] = job.error
    return view


class JobStore:
    def __init__(self, db: Database, clock: Clock, ttl: float) -> None:
        self.db, self.clock, self.ttl = db, clock, ttl

    def _now(self) -> datetime:
        return utc(self.clock.now())

    async def create(self, job_type: str, job_input: dict[str, Any]) -> JobRecord:
        now = self._now()
        job = JobRecord(
            id=new_job_id(),
            type=job_type,
            input=job_input,
            status=QUEUED,
            created_at=now,
            updated_at=now,
            expires_at=now + timedelta(seconds=self.ttl),
        )
        async with self.db.session() as session:
            session.add(job)
        return job

    async def find(self, job_id: str) -> JobRecord | None:
        """The job, or None when it does not exist or has expired."""
        async with self.db.session() as session:
            job = await session.get(JobRecord, job_id)
        return job if job is not None and job.expires_at > self._now() else None

    async def get(self, job_id: str) -> JobRecord:
        job = await self.find(job_id)
        if job is None:
            raise NotFound(
                f"No job '{job_id}': it never existed or expired ({self.ttl:g} s after creation).",
                param="id",
            )
        return job

    async def _move(self, job_id: str, sources: tuple[str, ...], target: str, **values: Any) -> bool:
        now = self._now()
        statement = (
            update(JobRecord)
            .where(
                col(JobRecord.id) == job_id,
                col(JobRecord.status).in_(sources),
                col(JobRecord.expires_at) > now,
            )
            .values(status=target, updated_at=now, **values)
        )
        async with self.db.session() as session:
            result = await session.execute(statement)
        return getattr(result, "rowcount", 0) == 1

    async def claim(self, job_id: str) -> JobRecord | None:
        """queued -> running; None when another worker took it or it was cancelled or expired."""
        return await self.find(job_id) if await self._move(job_id, (QUEUED,), RUNNING) else None

    async def requeue(self, job_id: str) -> bool:
        """running -> queued: a worker shutting down hands its job back for the next worker."""
        return await self._move(job_id, (RUNNING,), QUEUED)

    async def finish(
        self, job_id: str, *, result: dict[str, Any] | None = None, error: dict[str, Any] | None = None
    ) -> bool:
        """running -> succeeded (result) or failed (error); False when it was cancelled meanwhile."""
        target = FAILED if error is not None else SUCCEEDED
        return await self._move(job_id, (RUNNING,), target, result=result, error=error)

    async def cancel(self, job_id: str) -> JobRecord:
        """queued | running -> cancelled; 409 when the job already finished."""
        if not await self._move(job_id, UNFINISHED, CANCELLED):
            job = await self.get(job_id)
            raise Conflict(
                f"Job {job_id} is already {job.status}; only queued or running jobs can be cancelled."
            )
        return await self.get(job_id)

    async def orphans(self, idle_before: datetime) -> list[str]:
        """Unfinished jobs untouched since ``idle_before`` (their worker died or their enqueue was
        lost), set back to queued with a fresh ``updated_at``; the caller enqueues the ids again."""
        now = self._now()
        idle = (
            col(JobRecord.status).in_(UNFINISHED),
            col(JobRecord.updated_at) <= idle_before,
            col(JobRecord.expires_at) > now,
        )
        async with self.db.session() as session:
            rows = await session.execute(
                select(JobRecord.id).where(*idle).order_by(col(JobRecord.created_at))
            )
            ids = list(rows.scalars())
            if ids:
                await session.execute(
                    update(JobRecord)
                    .where(col(JobRecord.id).in_(ids), *idle)
                    .values(status=QUEUED, updated_at=now)
                )
        return ids

    async def purge(self) -> int:
        """Delete expired jobs (they already answer 404); returns how many."""
        async with self.db.session() as session:
            result = await session.execute(delete(JobRecord).where(col(JobRecord.expires_at) <= self._now()))
        return int(getattr(result, "rowcount", 0) or 0)
