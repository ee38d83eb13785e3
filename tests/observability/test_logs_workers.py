"""Logs with ``agentgate serve --workers 2``: JSON lines from every worker, each request's access
line with its request id, the id echoed in the response, and a start without library chatter."""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from pathlib import Path

import httpx
import pytest

from tests.operability.served import chat_body, serving, workers_started

pytestmark = pytest.mark.redis
GENERATED = re.compile(r"[0-9a-f]{32}")
ROUNDS = 5


def worker_pids(lines: list[str], ids: list[str]) -> set[int]:
    """The processes whose access lines carry these request ids."""
    wanted = set(ids)
    records = (json.loads(line) for line in lines if line.startswith("{"))
    return {
        r["pid"] for r in records if r.get("logger") == "agentgate.access" and r.get("request_id") in wanted
    }


async def test_two_workers_write_json_lines_that_carry_each_request_id(
    tmp_path: Path, redis_url: str
) -> None:
    env = {
        "AGENTGATE_REDIS_URL": redis_url,
        "AGENTGATE_KV_PREFIX": f"ops-logs-{uuid.uuid4().hex[:8]}:",
        "AGENTGATE_LOG_FORMAT": "json",
        "AGENTGATE_ACCESS_LOG": "true",
    }
    with serving(tmp_path, workers=2, **env) as server:
        key = await server.key()
        ids: list[str] = []
        answers: list[httpx.Response] = []
        # A connection per request, all at once: both workers accept some of them. The kernel
        # decides who accepts, so on a busy machine another round may be needed to reach both.
        limits = httpx.Limits(max_keepalive_connections=0, max_connections=40)
        async with httpx.AsyncClient(base_url=server.url, limits=limits, timeout=30) as client:
            headers = {"Authorization": f"Bearer {key}"}
            await workers_started(client, 2)
            for _ in range(ROUNDS):
                batch = [f"ops-{uuid.uuid4().hex[:12]}-{i}" for i in range(40)]
                ids += batch
                answers += await asyncio.gather(
                    *(
                        client.post(
                            "/v1/chat/completions", json=chat_body(), headers={**headers, "X-Request-Id": i}
                        )
                        for i in batch
                    )
                )
                if len(worker_pids(server.log_lines(), ids)) == 2:
                    break
            generated = await client.get("/health")
            insane = await client.get("/health", headers={"X-Request-Id": "two words " + "x" * 200})
        lines = server.log_lines()

    assert [a.status_code for a in answers] == [200] * len(ids)
    assert [a.headers["X-Request-Id"] for a in answers] == ids  # a sane id comes back as sent
    assert GENERATED.fullmatch(generated.headers["X-Request-Id"])  # none sent: a new one
    assert GENERATED.fullmatch(insane.headers["X-Request-Id"])  # spaces, 200 characters: replaced

    records = [json.loads(line) for line in lines]  # every line is one JSON object
    access = {r["request_id"]: r for r in records if r["logger"] == "agentgate.access"}
    for request_id in ids:
        line = access[request_id]
        assert (line["method"], line["path"], line["status"], line["level"]) == (
            "POST",
            "/v1/chat/completions",
            200,
            "INFO",
        )
        assert line["duration_ms"] > 0 and line["time"].endswith("Z")
    assert access[generated.headers["X-Request-Id"]]["path"] == "/health"
    # Logging is configured in each worker process, not only in the parent.
    assert len(worker_pids(lines, ids)) == 2
    # A quiet start: no migration steps, no session-manager or job-queue chatter.
    assert not [r for r in records if r["logger"].split(".")[0] in ("alembic", "arq", "mcp")]
