"""kill -9 of a server in the middle of writes, then a restart: every acknowledged write is there.

Writes: API keys (admin API), jobs and chat-proxy messages with Idempotency-Key, gateway chat
completions (JSON and streams; their usage rows go through the Redis usage log). A write counts
as acknowledged when its 2xx response (for a stream: its ``[DONE]``) reached the client.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass, field

import httpx
import psycopg
import pytest

from agent_server.gateway import provision
from tests.scale.conftest import Deployment, Server, admin_token, bearer, client

pytestmark = [pytest.mark.redis, pytest.mark.postgres]
MODEL = "agentgate-mock-small"


@dataclass
class Acked:
    keys: list[str] = field(default_factory=list)
    jobs: dict[str, tuple[dict, dict]] = field(default_factory=dict)  # idempotency key -> (body, answer)
    chats: dict[str, tuple[dict, dict]] = field(default_factory=dict)
    completions: int = 0
    failures: int = 0


def idempotency(key: str) -> dict[str, str]:
    return {"Idempotency-Key": key}


async def writes(
    server: Server, admin: dict[str, str], api_key: str, acked: Acked, stop: asyncio.Event
) -> None:
    async with client(server, timeout=10) as c:
        token_answer = await c.get("/api/chat-completion.php?action=token", headers={"Origin": server.url})
        token = token_answer.json()["token"]

        async def key_lane() -> None:
            response = await c.post(
                "/admin/api-keys", json={"name": "k", "scopes": ["models"]}, headers=admin
            )
            if response.status_code == 201:
                acked.keys.append(response.json()["id"])

        async def job_lane() -> None:
            key, body = str(uuid.uuid4()), {"type": "faq_lookup", "input": {"query": "billing"}}
            response = await c.post("/api/jobs", json=body, headers=idempotency(key))
            if response.status_code == 202:
                acked.jobs[key] = (body, response.json())

        async def proxy_lane() -> None:
            key = str(uuid.uuid4())
            body = {"message": "How do I rotate my API key?", "mode": "faq", "session_token": token}
            headers = {"X-Platform-Token": token, **idempotency(key)}
            response = await c.post("/api/chat-completion.php", json=body, headers=headers)
            if response.status_code == 200:
                acked.chats[key] = (body, response.json())

        async def completion_lane(stream: bool) -> None:
            body = {"model": MODEL, "messages": [{"role": "user", "content": "Hi"}], "stream": stream}
            response = await c.post("/v1/chat/completions", json=body, headers=bearer(api_key))
            if response.status_code == 200 and (not stream or response.text.rstrip().endswith("[DONE]")):
                acked.completions += 1

        async def lane(work: object) -> None:
            while not stop.is_set():
                try:
                    await work()  # type: ignore[operator]
                except httpx.HTTPError:
                    acked.failures += 1  # the server died under this request: not acknowledged
                    await asyncio.sleep(0.05)

        lanes = [
            key_lane,
            job_lane,
            proxy_lane,
            lambda: completion_lane(False),
            lambda: completion_lane(True),
        ]
        await asyncio.gather(*(lane(work) for work in lanes for _ in range(3)))


def rows(database_url: str, query: str, *args: object) -> list[tuple]:
    with psycopg.connect(database_url) as conn:
        return conn.execute(query, args).fetchall()  # type: ignore[arg-type]


async def test_every_acknowledged_write_survives_kill_9_and_restart(deployment: Deployment) -> None:
    victim = deployment.server("victim").wait_ready()
    admin = bearer(await admin_token(victim))
    tenant = await provision.create_tenant(
        deployment.settings, f"ent-{uuid.uuid4().hex[:8]}", "enterprise", 10**6
    )
    key_record, api_key = await provision.create_key(deployment.settings, tenant.id, "kill", ["chat"])
    acked, stop = Acked(), asyncio.Event()
    load = asyncio.create_task(writes(victim, admin, api_key, acked, stop))
    # Kill once every kind of write has been acknowledged (a loaded machine takes longer to get there),
    # then a moment later, so writes are in flight.
    for _ in range(600):
        if acked.keys and acked.jobs and acked.chats and acked.completions:
            break
        await asyncio.sleep(0.1)
    await asyncio.sleep(0.5)
    victim.kill()  # SIGKILL in the middle of the writes
    await asyncio.sleep(0.3)
    stop.set()
    await load
    print(  # shown with -s: what the kill interrupted
        f"acknowledged before kill -9: {len(acked.keys)} keys, {len(acked.jobs)} jobs, "
        f"{len(acked.chats)} chat-proxy answers, {acked.completions} completions; {acked.failures} cut"
    )
    assert acked.failures > 0  # requests were in flight when it died
    assert acked.keys and acked.jobs and acked.chats and acked.completions

    restarted = deployment.server("victim-restarted", port=victim.port).wait_ready()
    database = deployment.env["AGENTGATE_DATABASE_URL"]
    stored_keys = {row[0] for row in rows(database, "SELECT id FROM api_keys")}
    assert set(acked.keys) <= stored_keys
    stored_jobs = {row[0] for row in rows(database, "SELECT id FROM jobs")}
    assert {answer["job_id"] for _, answer in acked.jobs.values()} <= stored_jobs
    async with client(restarted) as c:
        for path, answers in (("/api/jobs", acked.jobs), ("/api/chat-completion.php", acked.chats)):
            for key, (body, answer) in answers.items():
                headers = idempotency(key)
                if path != "/api/jobs":
                    headers["X-Platform-Token"] = body["session_token"]
                replay = await c.post(path, json=body, headers=headers)
                assert replay.headers.get("Idempotency-Replayed") == "true", (
                    path,
                    replay.status_code,
                    replay.text,
                )
                assert replay.json() == answer
        deadline = time.monotonic() + 20  # jobs the dead process left queued or running are run
        for _, answer in acked.jobs.values():
            while (job := (await c.get(f"/api/jobs/{answer['job_id']}")).json())["status"] != "succeeded":
                assert time.monotonic() < deadline, job
                await asyncio.sleep(0.1)
    deadline = time.monotonic() + 15  # usage rows wait in Redis until a server drains them
    query = "SELECT count(*) FROM usage_records WHERE key_id = %s"
    while (stored := rows(database, query, key_record.id)[0][0]) < acked.completions:
        assert time.monotonic() < deadline, (stored, acked.completions)
        await asyncio.sleep(0.2)
