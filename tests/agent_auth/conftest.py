"""Agent sign-in fixtures: an app on a ManualClock over ASGI, its mail kept in the outbox for reading
(tests/accounts/conftest.py's ``World``), and the ``openai`` SDK talking to it in-process."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import httpx
import pytest
from openai import AsyncOpenAI

from agent_server.foundation.clock import ManualClock
from agent_server.foundation.settings import Settings
from http_facade.app import create_app
from tests.accounts.conftest import World, accounts_settings
from tests.conftest import BASE_URL, running
from tests.gateway.conftest import Harness

WorldFactory = Callable[..., AbstractAsyncContextManager[World]]


@pytest.fixture
def make_world(settings: Settings) -> WorldFactory:
    """``async with make_world(**settings_changes) as world``."""

    @asynccontextmanager
    async def make(**changes: Any) -> AsyncIterator[World]:
        changed = accounts_settings(settings, **changes)
        app = create_app(changed, clock=ManualClock(start=time.time()))
        async with (
            running(app),
            httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url=BASE_URL) as client,
        ):
            yield World(app, client, app.state.services.clock, changed)

    return make


@pytest.fixture
async def world(make_world: WorldFactory) -> AsyncIterator[World]:
    async with make_world() as w:
        yield w


def sdk(world: World | Harness, key: str) -> AsyncOpenAI:
    """The official client with only its base URL and key set, over the app's ASGI transport."""
    http = httpx.AsyncClient(transport=httpx.ASGITransport(world.app), base_url=BASE_URL)
    return AsyncOpenAI(base_url=f"{BASE_URL}/v1", api_key=key, http_client=http, max_retries=0)


async def anonymous(world: World, email: str) -> httpx.Response:
    return await world.client.post("/agent/auth", json={"identity_type": "anonymous", "email": email})
