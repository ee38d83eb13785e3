"""Contract 3.2: a revoked key's running stream is cut within a second, with an in-band 401 event,
``[DONE]`` and the upstream closed; a key that stays valid streams to its end (real uvicorn)."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
import uuid
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import httpx
import pytest

from agent_server.foundation.settings import Settings
from agent_server.gateway import provision
from agent_server.gateway.relay import KEY_CHECK_SECONDS
from tests.conftest import BASE_URL, LiveServer
from tests.llm.conftest import config
from tests.llm.recording_upstream import RecordingUpstream

MODEL = "gpt-4o-mini"
BODY = {"model": MODEL, "messages": [{"role": "user", "content": "Say hello slowly"}], "stream": True}


@pytest.fixture
def slow_upstream() -> Iterator[RecordingUpstream]:
    with RecordingUpstream() as server:
        server.event_delay = 0.6  # nine events: more than five seconds of stream
        yield server


@pytest.fixture
def settings(tmp_path: Path, slow_upstream: RecordingUpstream) -> Settings:
    return Settings(
        mode="production",
        data_dir=tmp_path,
        public_base_url=BASE_URL,
        redis_url=None,
        database_url=None,
        upstreams=[config(slow_upstream.base_url, "up", models={MODEL: "upstream-model-1"})],
    )


async def admin_and_key(settings: Settings, server: LiveServer) -> tuple[dict[str, str], str, str]:
    tenant = await provision.create_tenant(settings, f"rev-{uuid.uuid4().hex[:8]}", "starter")
    email, password = f"admin-{uuid.uuid4().hex[:6]}@example.com", f"pw-{uuid.uuid4()}"
    await provision.create_user(settings, tenant.id, email, password, admin=True)
    record, key = await provision.create_key(settings, tenant.id, "streaming", ["chat"])
    async with httpx.AsyncClient(base_url=server.url) as client:
        login = await client.post("/admin/auth/login", json={"email": email, "password": password})
    assert login.status_code == 200, login.text
    return {"Authorization": f"Bearer {login.json()['access_token']}"}, record.id, key


async def test_revoking_a_key_cuts_its_running_stream_within_a_second(
    live_server: LiveServer, settings: Settings, slow_upstream: RecordingUpstream
) -> None:
    admin, key_id, key = await admin_and_key(settings, live_server)
    lines: list[str] = []
    async with httpx.AsyncClient(base_url=live_server.url, timeout=10) as client:
        headers = {"Authorization": f"Bearer {key}"}
        async with client.stream("POST", "/v1/chat/completions", json=BODY, headers=headers) as response:
            assert response.status_code == 200
            events = response.aiter_lines()
            async for line in events:
                lines.append(line)
                if '"content":"Hi"' in line:
                    break  # the stream runs: revoke its key now
            revoked = await client.delete(f"/admin/api-keys/{key_id}", headers=admin)
            assert revoked.status_code == 200, revoked.text
            revoked_at = time.monotonic()
            lines += [line async for line in events]
            ended_after = time.monotonic() - revoked_at
    data = [line.removeprefix("data: ") for line in lines if line.startswith("data: ")]
    assert data[-1] == "[DONE]"
    error = json.loads(data[-2])["error"]
    assert error["code"] == "invalid_api_key" and error["type"] == "authentication_error"
    assert ended_after < KEY_CHECK_SECONDS + 1.0  # the stream had more than three seconds to go
    assert slow_upstream.stream_ended.wait(2) and not slow_upstream.stream_finished  # upstream closed
    rows: list[tuple[int]] = []
    for _ in range(40):  # the usage writer flushes every 0.5 s
        with closing(sqlite3.connect(settings.data_dir / "agentgate.db")) as db:
            rows = db.execute("SELECT status FROM usage_records WHERE stream").fetchall()
        if rows:
            break
        await asyncio.sleep(0.1)
    assert rows == [(401,)]


async def test_a_valid_key_streams_to_the_end_through_its_checks(
    live_server: LiveServer, settings: Settings, slow_upstream: RecordingUpstream
) -> None:
    _, _, key = await admin_and_key(settings, live_server)
    async with httpx.AsyncClient(base_url=live_server.url, timeout=10) as client:
        response = await client.post(
            "/v1/chat/completions", json=BODY, headers={"Authorization": f"Bearer {key}"}
        )
    data = [line.removeprefix("data: ") for line in response.text.split("\n") if line.startswith("data: ")]
    assert data[-1] == "[DONE]" and not any('"error"' in item for item in data)
    assert sum('"finish_reason":"stop"' in item for item in data) == 1 and slow_upstream.stream_finished
