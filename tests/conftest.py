"""Shared fixtures: an app per test over ASGI, a real uvicorn on a free port, real Redis and PostgreSQL.

Redis and PostgreSQL tests skip with a reason when the service is missing, except with CI=true,
where a missing service fails the run.
"""

from __future__ import annotations

import asyncio
import gc
import logging
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
from argon2 import PasswordHasher
from fastapi import FastAPI
from sqlmodel import SQLModel

from agent_server.foundation.clock import ManualClock
from agent_server.foundation.settings import Settings
from agent_server.gateway import passwords
from http_facade.app import create_app
from tests.support.migrated import migrate_postgres, sqlite_template

# Production-mode apps in the tests of other features run the sandbox payment provider on purpose
# (production refuses it otherwise, docs/billing.md); the test of that refusal turns this off.
os.environ.setdefault("AGENTGATE_BILLING_ALLOW_SANDBOX_IN_PRODUCTION", "true")
BASE_URL = "http://127.0.0.1:8000"

# The in-process apps hash passwords with argon2id at its lowest cost: the OWASP cost (~40 ms of CPU
# a hash or verify) was a tenth of the suite's time. Servers the tests start as processes keep the
# real cost, and tests/accounts/test_password_cost.py checks it.
passwords._hasher = PasswordHasher(time_cost=1, memory_cost=8, parallelism=1)


def _per_worker(url: str) -> str:
    """Each parallel test process (pytest-xdist) on a Redis database of its own: per-address limits
    and other shared counters of one process's tests never meet another's."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker:
        return url
    base, _, database = url.rpartition("/")
    if not database.isdigit():  # no database in the URL: Redis's 0
        base, database = url.rstrip("/"), "0"
    return f"{base}/{int(database) + 1 + int(worker.removeprefix('gw'))}"


REDIS_URL = _per_worker(os.environ.get("AGENTGATE_TEST_REDIS_URL", "redis://127.0.0.1:6379/0"))
POSTGRES_URL = os.environ.get("AGENTGATE_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")


# The longest modules first: `make test` spreads modules over processes (pytest-xdist, loadscope,
# with --no-loadscope-reorder: xdist would otherwise hand out the modules with the most tests first,
# which put the two one-test schemathesis modules, a third of the run's CPU, together at its end).
LONG_FIRST = (
    "tests/security/test_schemathesis.py",
    "tests/commerce/test_acp_schemathesis.py",
    "tests/browser/",
    "tests/security/test_fuzz_queries.py",
    "tests/security/test_role_policy.py",
    "tests/mcp/test_inspector.py",
    "tests/scale/",
    "tests/operability/",
    "tests/observability/",
)


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> Iterator[object]:
    """Collect without the garbage collector: importing the test modules made it run 27 full passes
    over a growing heap, 4 of the 15 s of CPU each test process spent collecting."""
    gc.disable()
    try:
        return (yield)
    finally:
        gc.enable()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        return next(
            (i for i, prefix in enumerate(LONG_FIRST) if item.nodeid.startswith(prefix)), len(LONG_FIRST)
        )

    items.sort(key=rank)  # stable: each module's tests stay together and in order


def require_service(name: str, problem: str | None) -> None:
    """Skip (or, in CI, fail) when a real service the test needs is not reachable."""
    if problem is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"{name} is required when CI=true but is not reachable: {problem}")
    pytest.skip(f"{name} not reachable ({problem}); start it to run this test")


@pytest.fixture(autouse=True)
def _orm_statement_caches_dropped() -> Iterator[None]:
    """Empty the ORM's per-mapper statement caches after each test. They are keyed by the engine's
    dialect, so in a process that builds an engine per test they keep every dead engine's dialect,
    its type caches and up to 100 compiled statements a mapper: a test process's heap grew by about
    1,100 objects a test, and every full garbage collection walked them all. A new engine could not
    have used them."""
    yield
    for mapper in SQLModel._sa_registry.mappers:
        mapper._compiled_cache.clear()


@pytest.fixture(autouse=True)
def _logging_restored() -> Iterator[None]:
    """Undo what a test's in-process ``agentgate`` command configures (dictConfig): a root handler
    on a captured stream that later closes, logger levels that would silence another test's logs."""
    loggers = logging.root.manager.loggerDict
    root_handlers, root_level = logging.root.handlers[:], logging.root.level
    levels = {name: lg.level for name, lg in loggers.items() if isinstance(lg, logging.Logger)}
    yield
    logging.root.handlers[:] = root_handlers
    logging.root.setLevel(root_level)
    for name, logger in list(loggers.items()):
        if isinstance(logger, logging.Logger):
            logger.setLevel(levels.get(name, logging.NOTSET))


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


def fresh_database(prefix: str = "agentgate_test", template: str | None = None) -> Iterator[str]:
    """Create a PostgreSQL database (empty, or a copy of ``template``), yield its URL, drop it afterwards."""
    import psycopg

    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    copy = f' TEMPLATE "{template}"' if template else ""
    try:
        with psycopg.connect(POSTGRES_URL, autocommit=True, connect_timeout=2) as conn:
            conn.execute(f'CREATE DATABASE "{name}"{copy}')
    except psycopg.Error as exc:
        require_service("PostgreSQL", str(exc).strip())
    yield POSTGRES_URL.rsplit("/", 1)[0] + "/" + name
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def _postgres_template() -> Iterator[str]:
    """A PostgreSQL database migrated once per test process, copied by ``postgres_url``."""
    for url in fresh_database("agentgate_template"):
        migrate_postgres(url)
        yield url.rsplit("/", 1)[1]


@pytest.fixture(autouse=True, scope="session")
def _sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """New SQLite databases of the tests' apps start from one migrated copy (tests/support/migrated.py)."""
    with sqlite_template(tmp_path_factory.mktemp("sqlite-template")):
        yield


@pytest.fixture
def empty_postgres_url() -> Iterator[str]:
    """A fresh PostgreSQL database without any schema, for the tests of migrating one."""
    yield from fresh_database()


@pytest.fixture
def postgres_url(_postgres_template: str) -> Iterator[str]:
    """A fresh PostgreSQL database at the schema's head for one test, dropped afterwards."""
    yield from fresh_database(template=_postgres_template)


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
