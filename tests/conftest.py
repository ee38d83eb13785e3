"""Shared fixtures: an app per test over ASGI, a real uvicorn on a free port, real Redis and PostgreSQL.

Redis and PostgreSQL tests skip with a reason when the service is missing, except with CI=true,
where a missing service fails the run.
"""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest
import pytest_asyncio
import uvicorn
from fastapi import FastAPI

from agent_server.clock import ManualClock
from agent_server.settings import Settings
from http_facade.app import create_app

# Production-mode apps in the tests of other features run the sandbox payment provider on purpose
# (production refuses it otherwise, docs/billing.md); the test of that refusal turns this off.
os.environ.setdefault("AGENTGATE_BILLING_ALLOW_SANDBOX_IN_PRODUCTION", "true")
BASE_URL = "http://127.0.0.1:8000"
REDIS_URL = os.environ.get("AGENTGATE_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
POSTGRES_URL = os.environ.get("AGENTGATE_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")


def require_service(name: str, problem: str | None) -> None:
    """Skip (or, in CI, fail) when a real service the test needs is not reachable."""
    if problem is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"{name} is required when CI=true but is not reachable: {problem}")
    pytest.skip(f"{name} not reachable ({problem}); start it to run this test")


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path, public_base_url=BASE_URL, redis_url=None, database_url=None)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@asynccontextmanager
async def running(application: FastAPI) -> AsyncIterator[FastAPI]:
    """Run the app's lifespan in a task of its own: its task groups must start and end in one task."""
    started, stop = asyncio.Event(), asyncio.Event()

    async def serve() -> None:
        async with application.router.lifespan_context(application):
            started.set()
            await stop.wait()

    task = asyncio.create_task(serve())
    waiter = asyncio.create_task(started.wait())
    await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    if task.done():
        waiter.cancel()
        task.result()  # raises the start-up error
    try:
        yield application
    finally:
        stop.set()
        await task


@pytest.fixture
async def app(settings: Settings) -> AsyncIterator[FastAPI]:
    async with running(create_app(settings)) as application:
        yield application


@pytest.fixture
async def client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url=BASE_URL) as c:
        yield c


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LiveServer:
    """A real uvicorn serving ``create_app(settings)`` on a free loopback port, in a thread."""

    def __init__(self, settings: Settings) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        settings = settings.model_copy(update={"public_base_url": self.url})
        config = uvicorn.Config(create_app(settings), host="127.0.0.1", port=self.port, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture
def live_server(settings: Settings) -> Iterator[LiveServer]:
    with LiveServer(settings) as server:
        yield server


@pytest.fixture
def redis_url() -> Iterator[str]:
    import redis

    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1).ping()
    except redis.RedisError as exc:
        require_service("Redis", str(exc))
    yield REDIS_URL


def fresh_database(prefix: str = "agentgate_test") -> Iterator[str]:
    """Create an empty PostgreSQL database, yield its URL, drop it afterwards."""
    import psycopg

    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    try:
        with psycopg.connect(POSTGRES_URL, autocommit=True, connect_timeout=2) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
    except psycopg.Error as exc:
        require_service("PostgreSQL", str(exc).strip())
    yield POSTGRES_URL.rsplit("/", 1)[0] + "/" + name
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A fresh, empty PostgreSQL database for one test, dropped afterwards."""
    yield from fresh_database()


@pytest.fixture(scope="module")
def module_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """Settings of ``module_client``'s app; a test module may override this fixture."""
    return Settings(
        data_dir=tmp_path_factory.mktemp("app"), public_base_url=BASE_URL, redis_url=None, database_url=None
    )


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def module_client(module_settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    """One app per test module, over ASGI, for tests that do not change its state (saves ~0.3 s a test).

    A module using it runs its tests in the module's loop: ``pytestmark = pytest.mark.asyncio(loop_scope="module")``.
    """
    async with (
        running(create_app(module_settings)) as application,
        httpx.AsyncClient(transport=httpx.ASGITransport(application), base_url=BASE_URL) as c,
    ):
        yield c
