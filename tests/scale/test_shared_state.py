"""Two ``agentgate serve`` processes and an ``agentgate worker`` on one PostgreSQL and one Redis:
one rate limit in total, revocation everywhere within a second, jobs run by the worker process."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import Counter
from collections.abc import Iterator

import pytest

from agent_server.gateway import provision
from tests.scale.conftest import Deployment, Proc, Server, admin_token, align_to_window, bearer, client

pytestmark = [pytest.mark.redis, pytest.mark.postgres]
WINDOW = 3600.0  # AGENTGATE_RATE_LIMIT_WINDOW_SECONDS of the deployment


@pytest.fixture(scope="module")
def scale_env() -> dict[str, str]:
    return {"AGENTGATE_JOB_WORKER": "none"}  # the servers only enqueue; `agentgate worker` runs jobs


@pytest.fixture(scope="module")
def servers(deployment: Deployment) -> tuple[Server, Server]:
    one, two = deployment.server("server-1"), deployment.server("server-2")
    return one.wait_ready(), two.wait_ready()


@pytest.fixture(scope="module")
def worker(deployment: Deployment, servers: tuple[Server, Server]) -> Iterator[Proc]:
    proc = deployment.worker()
    yield proc
    proc.stop()


async def test_one_starter_key_gets_exactly_60_of_500_concurrent_requests_across_two_processes(
    deployment: Deployment, servers: tuple[Server, Server]
) -> None:
    tenant = await provision.create_tenant(deployment.settings, f"starter-{uuid.uuid4().hex[:8]}", "starter")
    _, key = await provision.create_key(deployment.settings, tenant.id, "exact", ["chat", "models"])
    await align_to_window(WINDOW)
    async with client(servers[0]) as a, client(servers[1]) as b:

        async def call(i: int) -> tuple[int, int, str | None]:
            response = await (a, b)[i % 2].get("/v1/models", headers=bearer(key))
            return i % 2, response.status_code, response.headers.get("X-RateLimit-Degraded")

        results = await asyncio.gather(*(call(i) for i in range(500)))
    statuses = Counter(status for _, status, _ in results)
    assert statuses == {200: 60, 429: 440}, statuses
    assert all(degraded is None for _, _, degraded in results)  # the shared counter, not a fallback
    assert Counter(server for server, _, _ in results) == {0: 250, 1: 250}


async def test_a_key_revoked_or_rotated_on_one_process_is_refused_by_the_other_within_a_second(
    servers: tuple[Server, Server],
) -> None:
    one, two = servers
    admin = bearer(await admin_token(one))
    async with client(one) as a, client(two) as b:
        for action in ("revoke", "rotate"):
            created = await a.post(
                "/admin/api-keys", json={"name": action, "scopes": ["models"]}, headers=admin
            )
            assert created.status_code == 201, created.text
            key_id, key = created.json()["id"], created.json()["key"]
            for _ in range(3):  # both processes know (and cache) the key
                assert (await b.get("/v1/models", headers=bearer(key))).status_code == 200
                assert (await a.get("/v1/models", headers=bearer(key))).status_code == 200
            if action == "revoke":
                done = await a.delete(f"/admin/api-keys/{key_id}", headers=admin)
            else:
                done = await a.post("/admin/keys/rotate", json={"key_id": key_id}, headers=admin)
            assert done.status_code in (200, 201), done.text
            revoked_at = time.monotonic()
            assert (
                await a.get("/v1/models", headers=bearer(key))
            ).status_code == 401  # this process: at once
            while (status := (await b.get("/v1/models", headers=bearer(key))).status_code) == 200:
                assert time.monotonic() - revoked_at < 1.0, "the other process still accepts the key"
                await asyncio.sleep(0.02)
            assert status == 401
            assert time.monotonic() - revoked_at < 1.0


async def test_a_job_created_on_one_process_is_run_by_the_worker_and_polled_from_the_other(
    servers: tuple[Server, Server], worker: Proc
) -> None:
    one, two = servers
    async with client(one) as a, client(two) as b:
        created = await a.post("/api/jobs", json={"type": "faq_lookup", "input": {"query": "rate limits"}})
        assert created.status_code == 202, created.text
        job_id = created.json()["job_id"]
        deadline = time.monotonic() + 30
        while (job := (await b.get(f"/api/jobs/{job_id}")).json())["status"] in ("queued", "running"):
            assert worker.alive, worker.log_tail()
            assert time.monotonic() < deadline, f"job not run: {job}\n{worker.log_tail()}"
            await asyncio.sleep(0.1)
    assert job["status"] == "succeeded" and job["result"]["results"], job
