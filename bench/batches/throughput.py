"""Batch throughput on PostgreSQL + Redis, and what a running batch costs live calls (not a test).

    PYTHONPATH=. .venv/bin/python bench/batches/throughput.py [LINES] [RATE_LIMIT]

Starts a private redis-server, a fresh PostgreSQL database (dropped afterwards), one ``agentgate
serve`` (``job_worker=none``) and two ``agentgate worker`` processes, with the process classes of
tests/scale/conftest.py. One tenant (Professional plan, negotiated ``RATE_LIMIT`` requests per
minute, default 10^6) and one key; then, with one client at a time against the sandbox mock:

1. the p50 and p90 of ``POST /v1/chat/completions`` alone (``PROBES`` calls);
2. a batch of ``LINES`` chat lines (default 5,000): the seconds from creation to ``completed``, and
   the p50 and p90 of the same live calls made while it runs.

Prints one line of figures; docs/batches.md has a run's.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import time
import uuid
from pathlib import Path
from tempfile import mkdtemp

import httpx
from openai import AsyncOpenAI

from agent_server.foundation.settings import Settings
from agent_server.gateway import provision
from tests.batches.conftest import chat_lines
from tests.conftest import fresh_database
from tests.scale.conftest import AGENTGATE, BASE_ENV, Proc, RedisServer, Server

PROBES = 200
CHAT = {"model": "agentgate-mock-small", "messages": [{"role": "user", "content": "Hello"}]}


async def live_latencies(url: str, key: str, stop: asyncio.Event | None, count: int) -> list[float]:
    seconds: list[float] = []
    async with httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {key}"}) as c:
        while (stop is None and len(seconds) < count) or (stop is not None and not stop.is_set()):
            started = time.perf_counter()
            response = await c.post("/v1/chat/completions", json=CHAT)
            assert response.status_code == 200, response.text
            seconds.append(time.perf_counter() - started)
    return seconds


def quantiles(seconds: list[float]) -> str:
    cuts = statistics.quantiles(seconds, n=10)
    return f"p50 {statistics.median(seconds) * 1000:.1f} ms, p90 {cuts[8] * 1000:.1f} ms (n={len(seconds)})"


async def main(lines: int, rate_limit: int) -> None:
    logs = Path(mkdtemp(prefix="batch-bench-"))
    database = fresh_database("agentgate_bench")
    redis = RedisServer(logs).start()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("AGENTGATE_")},
        **BASE_ENV,
        "AGENTGATE_DATABASE_URL": next(database),
        "AGENTGATE_REDIS_URL": redis.url,
        "AGENTGATE_JOB_LEASE_SECONDS": "30",
    }
    procs: list[Proc] = []
    try:
        server = Server(
            "api", {**env, "AGENTGATE_DATA_DIR": str(logs / "api"), "AGENTGATE_JOB_WORKER": "none"}, logs
        )
        procs.append(server.start())
        server.wait_ready()
        for name in ("worker-a", "worker-b"):
            worker_env = {**env, "AGENTGATE_DATA_DIR": str(logs / name)}
            procs.append(Proc(name, [str(AGENTGATE), "worker"], worker_env, logs).start())
        settings = Settings(
            **{k.removeprefix("AGENTGATE_").lower(): v for k, v in env.items() if k.startswith("AGENTGATE_")},
            data_dir=logs / "bench",
        )
        tenant = await provision.create_tenant(
            settings, f"bench-{uuid.uuid4().hex[:6]}", "professional", rate_limit
        )
        key = (await provision.create_key(settings, tenant.id, "bench", ["chat", "files"]))[1]
        alone = await live_latencies(server.url, key, None, PROBES)
        async with AsyncOpenAI(
            base_url=f"{server.url}/v1", api_key=key, max_retries=0, timeout=120
        ) as client:
            upload = await client.files.create(file=("lines.jsonl", chat_lines(lines)), purpose="batch")
            stop = asyncio.Event()
            probes = asyncio.create_task(live_latencies(server.url, key, stop, 0))
            started = time.monotonic()
            batch = await client.batches.create(
                input_file_id=upload.id, endpoint="/v1/chat/completions", completion_window="24h"
            )
            while True:
                batch = await client.batches.retrieve(batch.id)
                if batch.status in {"completed", "failed"}:
                    break
                await asyncio.sleep(0.25)
            elapsed = time.monotonic() - started
            stop.set()
            during = await probes
        print(
            f"{lines} lines: {batch.status} in {elapsed:.1f} s ({lines / elapsed:.0f} lines/s); "
            f"live alone {quantiles(alone)}; live during the batch {quantiles(during)}"
        )
    finally:
        for proc in reversed(procs):
            proc.stop()
        redis.stop()
        next(database, None)


if __name__ == "__main__":
    asyncio.run(
        main(
            int(sys.argv[1]) if len(sys.argv) > 1 else 5000, int(sys.argv[2]) if len(sys.argv) > 2 else 10**6
        )
    )
