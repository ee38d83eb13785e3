"""A 5,000-line batch on PostgreSQL + Redis run by two ``agentgate worker`` processes; the worker
running the batch's slice is killed with SIGKILL mid-run. The batch completes with every line once
in its output and one usage row per line (the rows are counted in the database).

The worker to kill is the one burning CPU (its /proc stat): the other is idle while a slice runs.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from pathlib import Path

import psycopg
import pytest
from openai import AsyncOpenAI

from agent_server.gateway import provision
from tests.batches.conftest import chat_lines
from tests.scale.conftest import Deployment, Proc

pytestmark = [pytest.mark.redis, pytest.mark.postgres]
LINES = 5_000


@pytest.fixture(scope="module")
def scale_env() -> dict[str, str]:
    return {"AGENTGATE_JOB_LEASE_SECONDS": "4"}  # a killed worker's slice comes back after 4 s


def cpu_ticks(proc: Proc) -> int:
    fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


async def busiest(workers: list[Proc]) -> Proc:
    before = [cpu_ticks(w) for w in workers]
    await asyncio.sleep(0.5)
    spent = [cpu_ticks(w) - b for w, b in zip(workers, before, strict=True)]
    return workers[spent.index(max(spent))]


def count(database_url: str, query: str, *args: object) -> int:
    with psycopg.connect(database_url) as conn:
        return conn.execute(query, args).fetchone()[0]  # type: ignore[arg-type,index]


async def test_a_worker_killed_mid_batch_loses_nothing_and_bills_nothing_twice(
    deployment: Deployment,
) -> None:
    server = deployment.server("api", AGENTGATE_JOB_WORKER="none").wait_ready()  # only the workers run jobs
    workers = [deployment.worker("worker-a"), deployment.worker("worker-b")]
    tenant = await provision.create_tenant(
        deployment.settings, f"b-{uuid.uuid4().hex[:8]}", "professional", 10**6
    )
    key = (await provision.create_key(deployment.settings, tenant.id, "batch", ["chat", "files"]))[1]
    database = deployment.env["AGENTGATE_DATABASE_URL"]
    async with AsyncOpenAI(base_url=f"{server.url}/v1", api_key=key, max_retries=0, timeout=60) as client:
        upload = await client.files.create(file=("lines.jsonl", chat_lines(LINES)), purpose="batch")
        started = time.monotonic()
        batch = await client.batches.create(
            input_file_id=upload.id, endpoint="/v1/chat/completions", completion_window="24h"
        )
        deadline = time.monotonic() + 120
        while (await client.batches.retrieve(batch.id)).request_counts.completed < LINES // 5:  # type: ignore[union-attr]
            assert time.monotonic() < deadline
            await asyncio.sleep(0.2)
        victim = await busiest(workers)
        victim.kill()
        killed_at = (await client.batches.retrieve(batch.id)).request_counts.completed  # type: ignore[union-attr]
        while (done := await client.batches.retrieve(batch.id)).status != "completed":
            assert time.monotonic() < deadline, (done.status, done.request_counts)
            await asyncio.sleep(0.5)
        elapsed = time.monotonic() - started
        output = (await client.files.content(done.output_file_id)).content.decode().splitlines()  # type: ignore[arg-type]
    ids = [json.loads(line)["custom_id"] for line in output]
    assert len(ids) == LINES and set(ids) == {f"req-{n}" for n in range(LINES)}
    assert done.request_counts is not None and done.request_counts.completed == LINES
    assert count(database, "SELECT count(*) FROM batch_results WHERE batch_id = %s", batch.id) == LINES
    query = "SELECT count(*) FROM usage_records WHERE tenant_id = %s AND endpoint = 'batch/chat'"
    deadline = time.monotonic() + 15  # usage rows wait in Redis until a process drains them
    while (billed := count(database, query, tenant.id)) < LINES:
        assert time.monotonic() < deadline, billed
        await asyncio.sleep(0.2)
    await asyncio.sleep(1.0)  # a late duplicate would land now
    assert count(database, query, tenant.id) == LINES
    print(f"\n{LINES} lines in {elapsed:.1f} s with a SIGKILL at line {killed_at} ({victim.name})")
