"""The job runner's edges: a job past its time limit fails with TIMEOUT instead of being run again
by the sweep, and a worker that shuts down hands its running job back to the queue."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agent_server.foundation.clock import ManualClock
from agent_server.foundation.settings import Settings
from agent_server.jobs.runner import JobRunner
from agent_server.jobs.store import FAILED, QUEUED, JobStore
from agent_server.storage.db import Database
from agent_server.storage.migrate import upgrade


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[JobStore]:
    settings = Settings(data_dir=tmp_path, redis_url=None, database_url=None)
    upgrade(settings)
    db = Database(settings)
    yield JobStore(db, ManualClock(), ttl=1800)
    await db.dispose()


async def forever(_: dict[str, Any]) -> dict[str, Any]:
    await asyncio.Event().wait()
    return {}


async def test_a_job_past_its_time_limit_fails_with_timeout(store: JobStore) -> None:
    runner = JobRunner(store, {"kb_refresh": forever}, "http://127.0.0.1:8000")
    job = await store.create("kb_refresh", {})
    assert await runner.run(job.id, timeout=0.05) == FAILED
    failed = await store.get(job.id)
    assert failed.status == FAILED and failed.error is not None
    assert failed.error["error"]["code"] == "TIMEOUT"


async def test_a_worker_shutting_down_hands_its_job_back(store: JobStore) -> None:
    started = asyncio.Event()

    async def runs_until_stopped(_: dict[str, Any]) -> dict[str, Any]:
        started.set()
        return await forever({})

    runner = JobRunner(store, {"kb_refresh": runs_until_stopped}, "http://127.0.0.1:8000")
    job = await store.create("kb_refresh", {})
    task = asyncio.create_task(runner.run(job.id))
    # Cancelled once its handler runs: a cancel during the claim itself leaves the job to the lease
    # sweep. The running status alone came too early beside a CPU hog (the claim's commit is seen
    # before the runner has left the claim); the bound only stops a hang.
    await asyncio.wait_for(started.wait(), 30)
    assert (await store.get(job.id)).status == "running"
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert (await store.get(job.id)).status == QUEUED  # the next worker claims it at once
