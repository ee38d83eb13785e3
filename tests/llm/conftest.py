"""Fixtures of the LLM tests: fake upstreams on loopback and backends pointed at them."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest
from pydantic import SecretStr

from agent_server.foundation.settings_llm import UpstreamConfig
from agent_server.llm.openai_compat import OpenAICompatBackend
from tests.conftest import free_port
from tests.llm.fake_upstream import FakeUpstream

UPSTREAM_KEY = "sk-upstream-SECRET-7f3a9c"


@pytest.fixture
def upstream() -> Iterator[FakeUpstream]:
    with FakeUpstream() as server:
        yield server


@pytest.fixture
def upstream2() -> Iterator[FakeUpstream]:
    with FakeUpstream() as server:
        yield server


def config(base_url: str, name: str = "up", **extra: Any) -> UpstreamConfig:
    models = extra.pop("models", {"gpt-test": "upstream-model-1"})
    return UpstreamConfig(
        name=name, base_url=base_url, api_key=SecretStr(UPSTREAM_KEY), models=models, **extra
    )


def closed_port_url() -> str:
    """Nothing listens there: connecting is refused at once."""
    return f"http://127.0.0.1:{free_port()}/v1"


Factory = Callable[..., OpenAICompatBackend]


@pytest.fixture(params=["pooled", "httpx"])
async def make_backend(request: pytest.FixtureRequest) -> AsyncIterator[Factory]:
    """Backends on our pooled transport and on httpx's own: both must behave the same."""
    made: list[OpenAICompatBackend] = []

    def make(base_url: str, name: str = "up", **options: Any) -> OpenAICompatBackend:
        options = {"connect_timeout": 1.0, "read_timeout": 2.0, "backoff": 0.01, **options}
        options.setdefault("transport_kind", request.param)
        backend = OpenAICompatBackend(config(base_url, name), **options)
        made.append(backend)
        return backend

    yield make
    for backend in made:
        await backend.aclose()
