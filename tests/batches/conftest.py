"""Files and batches fixtures: a real uvicorn (the official ``openai`` SDK talks to it) and keys."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from openai import AsyncOpenAI

from agent_server.foundation.settings import Settings
from agent_server.gateway import provision
from tests.conftest import BASE_URL, LiveServer

CHAT_MODEL = "agentgate-mock-small"
FILES_SCOPES = ("chat", "embeddings", "files", "models")


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path, public_base_url=BASE_URL, redis_url=None, database_url=None)


@pytest.fixture
def live_server(settings: Settings) -> Iterator[LiveServer]:
    with LiveServer(settings) as server:
        yield server


async def new_key(
    settings: Settings,
    plan: str = "professional",
    scopes: tuple[str, ...] = FILES_SCOPES,
    rate_limit: int | None = None,
) -> str:
    """A key of a new tenant; ``rate_limit`` (a negotiated plan's) sets how fast its batches may run."""
    tenant = await provision.create_tenant(settings, f"files-{uuid.uuid4().hex[:8]}", plan, rate_limit)
    return (await provision.create_key(settings, tenant.id, "batches", list(scopes)))[1]


def sdk(server: LiveServer, key: str) -> AsyncOpenAI:
    return AsyncOpenAI(base_url=f"{server.url}/v1", api_key=key, max_retries=0)


def chat_lines(count: int, model: str = CHAT_MODEL) -> bytes:
    lines = (
        {
            "custom_id": f"req-{n}",
            "method": "POST",
            "url": "/v1/chat/completions",
            "body": {"model": model, "messages": [{"role": "user", "content": f"Line {n}"}]},
        }
        for n in range(count)
    )
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


def embedding_lines(count: int, model: str = "text-embedding-3-small") -> bytes:
    lines: list[dict[str, Any]] = [
        {
            "custom_id": f"emb-{n}",
            "method": "POST",
            "url": "/v1/embeddings",
            "body": {"model": model, "input": f"text {n}"},
        }
        for n in range(count)
    ]
    return "".join(json.dumps(line) + "\n" for line in lines).encode()
