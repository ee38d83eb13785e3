"""End to end: the official openai SDK -> a live gateway (production mode, live key) -> the fake upstream."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest
from openai import AsyncOpenAI

from agent_server.foundation.settings import Settings
from agent_server.gateway import provision
from tests.conftest import BASE_URL, LiveServer
from tests.llm.conftest import UPSTREAM_KEY, closed_port_url, config
from tests.llm.fake_upstream import FakeUpstream

MODEL = "gpt-4o-mini"  # on the starter plan; mapped to the upstream's own id
MESSAGES = [{"role": "user", "content": "Say hello"}]


@pytest.fixture
def settings(tmp_path: Path, upstream: FakeUpstream) -> Settings:
    return Settings(
        mode="production",
        data_dir=tmp_path,
        public_base_url=BASE_URL,
        redis_url=None,
        database_url=None,
        upstreams=[config(upstream.base_url, "up", models={MODEL: "upstream-model-1"})],
        llm_read_timeout_seconds=2.0,
    )


@pytest.fixture
def gateway(settings: Settings) -> Iterator[LiveServer]:
    with LiveServer(settings) as server:
        yield server


async def live_key(settings: Settings) -> str:
    tenant = await provision.create_tenant(settings, f"e2e-{uuid.uuid4().hex[:8]}", "starter")
    key = (await provision.create_key(settings, tenant.id, "e2e", ["chat", "models"]))[1]
    assert key.startswith("sk_live_")
    return key


def sdk(server: LiveServer, key: str) -> AsyncOpenAI:
    return AsyncOpenAI(base_url=f"{server.url}/v1", api_key=key, max_retries=0, timeout=10)


async def test_sdk_chats_plain_and_streaming_through_to_the_upstream(
    gateway: LiveServer, settings: Settings, upstream: FakeUpstream
) -> None:
    key = await live_key(settings)
    async with sdk(gateway, key) as client:
        completion = await client.chat.completions.create(model=MODEL, messages=MESSAGES, temperature=0.1)  # type: ignore[arg-type]
        assert completion.choices[0].message.content == "Hello from the upstream!"
        assert completion.model == MODEL and completion.usage and completion.usage.prompt_tokens == 11
        sent, headers = upstream.requests[-1], upstream.headers[-1]
        assert sent["model"] == "upstream-model-1" and sent["temperature"] == 0.1
        assert headers["authorization"] == f"Bearer {UPSTREAM_KEY}"  # ours, never the caller's key
        stream = await client.chat.completions.create(
            model=MODEL,
            messages=MESSAGES,  # type: ignore[arg-type]
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = [chunk async for chunk in stream]
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert text == "Hello from the upstream!"
        assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 5
        assert upstream.requests[-1]["stream"] is True


async def test_sdk_sees_a_mid_stream_failure_as_an_error(
    gateway: LiveServer, settings: Settings, upstream: FakeUpstream
) -> None:
    upstream.script.break_after = 2
    async with sdk(gateway, await live_key(settings)) as client:
        stream = await client.chat.completions.create(model=MODEL, messages=MESSAGES, stream=True)  # type: ignore[arg-type]
        got: list[str] = []
        with pytest.raises(openai.APIError):
            async for chunk in stream:
                got.extend(c.delta.content or "" for c in chunk.choices)
        assert "".join(got) == "Hello from"


async def test_sdk_gets_a_5xx_when_every_backend_is_down(tmp_path: Path, upstream: FakeUpstream) -> None:
    down = Settings(
        mode="production",
        data_dir=tmp_path,
        public_base_url=BASE_URL,
        redis_url=None,
        database_url=None,
        upstreams=[config(closed_port_url(), "down", models=[MODEL])],
        llm_retry_backoff_seconds=0.01,
    )
    with LiveServer(down) as server:
        async with sdk(server, await live_key(down)) as client:
            with pytest.raises(openai.InternalServerError) as caught:
                await client.chat.completions.create(model=MODEL, messages=MESSAGES)  # type: ignore[arg-type]
            assert caught.value.status_code == 503
            with pytest.raises(openai.InternalServerError):
                await client.chat.completions.create(model=MODEL, messages=MESSAGES, stream=True)  # type: ignore[arg-type]
