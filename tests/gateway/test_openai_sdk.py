"""The official ``openai`` SDK, with only base_url and api_key set, against a real uvicorn.

The rate-limit window is 1 s in this module, so the Retry-After test waits about a second, not a minute.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
import uuid
from contextlib import closing
from pathlib import Path

import httpx
import openai
import pytest
from openai import AsyncOpenAI

from agent_server.foundation.errors import UpstreamFailed
from agent_server.foundation.settings import Settings
from agent_server.gateway import provision
from tests.conftest import BASE_URL, LiveServer
from tests.gateway.conftest import MODEL, ScriptedBackend

MESSAGES = [{"role": "user", "content": "Say hello to the SDK"}]


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(
        data_dir=tmp_path,
        public_base_url=BASE_URL,
        redis_url=None,
        database_url=None,
        rate_limit_window_seconds=1.0,
    )


async def new_key(
    settings: Settings,
    plan: str = "starter",
    rate_limit: int | None = None,
    scopes: tuple[str, ...] = ("chat", "models"),
) -> str:
    tenant = await provision.create_tenant(settings, f"sdk-{uuid.uuid4().hex[:8]}", plan, rate_limit)
    return (await provision.create_key(settings, tenant.id, "sdk", list(scopes)))[1]


def sdk(server: LiveServer, key: str, **options: object) -> AsyncOpenAI:
    return AsyncOpenAI(base_url=f"{server.url}/v1", api_key=key, **options)  # type: ignore[arg-type]


async def test_sdk_chats_plain_and_streaming(live_server: LiveServer, settings: Settings) -> None:
    async with sdk(live_server, await new_key(settings)) as client:
        completion = await client.chat.completions.create(model=MODEL, messages=MESSAGES)  # type: ignore[arg-type]
        text = completion.choices[0].message.content or ""
        assert "Say hello to the SDK" in text and completion.usage and completion.usage.total_tokens > 0
        stream = await client.chat.completions.create(
            model=MODEL,
            messages=MESSAGES,  # type: ignore[arg-type]
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = [chunk async for chunk in stream]
        assert chunks[0].choices[0].delta.role == "assistant"
        assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == text
        assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens == completion.usage.total_tokens
        models = [m.id async for m in client.models.list()]
        assert models == [MODEL, "gpt-4o-mini"]


async def test_sdk_exception_classes(live_server: LiveServer, settings: Settings) -> None:
    async with sdk(live_server, "sk_test_" + "A" * 40) as client:
        with pytest.raises(openai.AuthenticationError) as unauthenticated:
            await client.chat.completions.create(model=MODEL, messages=MESSAGES)  # type: ignore[arg-type]
        assert unauthenticated.value.code == "invalid_api_key"
    async with sdk(live_server, await new_key(settings, scopes=("models",))) as client:
        with pytest.raises(openai.PermissionDeniedError) as denied:
            await client.chat.completions.create(model=MODEL, messages=MESSAGES)  # type: ignore[arg-type]
        assert denied.value.code == "insufficient_scope"
    async with sdk(live_server, await new_key(settings)) as client:
        with pytest.raises(openai.BadRequestError) as bad:
            await client.chat.completions.create(model="no-such-model", messages=MESSAGES)  # type: ignore[arg-type]
        assert bad.value.code == "model_not_found" and bad.value.param == "model"
    async with sdk(live_server, await new_key(settings, "enterprise", rate_limit=1), max_retries=0) as client:
        await client.models.list()
        with pytest.raises(openai.RateLimitError) as limited:
            await client.models.list()
        assert limited.value.code == "rate_limit_exceeded"
        assert int(limited.value.response.headers["Retry-After"]) >= 1


async def test_sdk_retry_honours_retry_after(live_server: LiveServer, settings: Settings) -> None:
    key = await new_key(settings, "enterprise", rate_limit=1)
    async with (
        sdk(live_server, key, max_retries=0) as strict,
        sdk(live_server, key, max_retries=1) as patient,
    ):
        for _ in range(6):  # spend a window early enough that the retry cannot land in the same one
            try:
                for _ in range(2):
                    await strict.chat.completions.create(model=MODEL, messages=MESSAGES)  # type: ignore[arg-type]
            except openai.RateLimitError as exc:
                if int(exc.response.headers["X-RateLimit-Reset"]) - time.time() > 0.3:
                    break
            await asyncio.sleep(0.35)
        else:
            pytest.fail("never saw a 429 early enough in a window")
        started = time.monotonic()
        completion = await patient.chat.completions.create(model=MODEL, messages=MESSAGES)  # type: ignore[arg-type]
        waited = time.monotonic() - started
        assert completion.choices[0].message.content
        assert 0.9 <= waited < 2.0  # it waited the 1 s Retry-After, then succeeded in the next window


async def test_streams_are_not_buffered(live_server: LiveServer, settings: Settings) -> None:
    services = live_server.server.config.app.state.services  # type: ignore[attr-defined]
    services.sandbox_llm = ScriptedBackend(["one ", "two ", "three ", "four"], delay=0.15)
    async with sdk(live_server, await new_key(settings)) as client:
        stream = await client.chat.completions.create(model=MODEL, messages=MESSAGES, stream=True)  # type: ignore[arg-type]
        arrivals = [(time.monotonic(), chunk) async for chunk in stream]
    content = [t for t, chunk in arrivals if chunk.choices and chunk.choices[0].delta.content]
    assert len(content) == 4
    assert content[-1] - content[0] > 0.3  # each delta reached the client when the backend sent it


async def test_a_mid_stream_failure_reaches_the_sdk_and_never_hangs(
    live_server: LiveServer, settings: Settings
) -> None:
    services = live_server.server.config.app.state.services  # type: ignore[attr-defined]
    services.sandbox_llm = ScriptedBackend(
        ["partial ", "answer "], UpstreamFailed("Upstream reset the connection.")
    )
    async with sdk(live_server, await new_key(settings)) as client:
        stream = await client.chat.completions.create(model=MODEL, messages=MESSAGES, stream=True)  # type: ignore[arg-type]
        received: list[str] = []

        async def consume() -> None:
            async for chunk in stream:
                received.append(chunk.choices[0].delta.content or "")

        with pytest.raises(openai.APIError) as failed:
            await asyncio.wait_for(consume(), timeout=5)
        assert "".join(received) == "partial answer "
        assert "Upstream reset the connection." in failed.value.message


async def test_a_client_leaving_mid_stream_closes_the_backend_stream(
    live_server: LiveServer, settings: Settings
) -> None:
    backend = ScriptedBackend([f"piece{i} " for i in range(50)], delay=0.05)
    live_server.server.config.app.state.services.sandbox_llm = backend  # type: ignore[attr-defined]
    key = await new_key(settings)
    body = {"model": MODEL, "messages": MESSAGES, "stream": True}
    async with httpx.AsyncClient(base_url=live_server.url) as client:
        headers = {"Authorization": f"Bearer {key}"}
        async with client.stream("POST", "/v1/chat/completions", json=body, headers=headers) as response:
            async for line in response.aiter_lines():
                if "piece1" in line:
                    break  # leave after two pieces of fifty
    left = time.monotonic()
    for _ in range(40):  # the backend must be closed well before it would have finished (2.5 s)
        if backend.closed:
            break
        await asyncio.sleep(0.05)
    assert backend.closed and time.monotonic() - left < 1.0
    # The request is recorded as 499 (client closed) with the tokens it had streamed, not as 200.
    database = settings.data_dir / "agentgate.db"
    for _ in range(40):  # the usage writer flushes every 0.5 s
        with closing(sqlite3.connect(database)) as db:
            rows = db.execute("SELECT status, completion_tokens FROM usage_records WHERE stream").fetchall()
        if rows:
            break
        await asyncio.sleep(0.1)
    assert len(rows) == 1 and rows[0][0] == 499 and 2 <= rows[0][1] < 50
