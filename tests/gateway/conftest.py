"""Gateway fixtures: an app on a ManualClock over ASGI, with helpers that make tenants, admins and keys.

Tenants and their admin users are made through the repository (there is no public route for that);
everything else (login, keys, /v1) goes over HTTP to the real app.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from agent_server.foundation.clock import ManualClock
from agent_server.foundation.errors import AgentError
from agent_server.foundation.settings import Settings
from agent_server.gateway import repository as repo
from agent_server.gateway.passwords import hash_password
from agent_server.gateway.service import Gateway
from agent_server.llm.types import ChatRequest, Completion, Delta, Usage
from agent_server.storage.db import Database
from agent_server.storage.migrate import upgrade
from http_facade.app import create_app
from tests.conftest import BASE_URL, running

PASSWORD = "correct horse battery staple"
MODEL = "agentgate-mock-small"
_password_hash: list[str] = []  # argon2 is slow on purpose: hash the shared test password once


async def password_hash() -> str:
    if not _password_hash:
        _password_hash.append(await hash_password(PASSWORD))
    return _password_hash[0]


def chat_body(content: str = "Hello there", **extra: Any) -> dict[str, Any]:
    return {"model": MODEL, "messages": [{"role": "user", "content": content}], **extra}


def key_headers(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@dataclass
class TenantAdmin:
    id: str
    email: str
    token: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


@dataclass
class Harness:
    app: FastAPI
    client: httpx.AsyncClient
    clock: ManualClock

    @property
    def gateway(self) -> Gateway:
        return self.app.state.gateway

    async def tenant(
        self,
        plan: str = "starter",
        *,
        rate_limit: int | None = None,
        permissions: tuple[str, ...] = ("tenant:admin",),
    ) -> TenantAdmin:
        name = f"tenant-{uuid.uuid4().hex[:10]}"
        db, now = self.gateway.db, self.clock.now()
        tenant = await repo.create_tenant(db, now, name, plan, rate_limit)
        email = f"admin@{name}.example"
        await repo.add_user(
            db, repo.new_user(now, tenant.id, email, await password_hash(), list(permissions))
        )
        return TenantAdmin(tenant.id, email, await self.login(email))

    async def login(self, email: str, password: str = PASSWORD) -> str:
        response = await self.client.post("/admin/auth/login", json={"email": email, "password": password})
        assert response.status_code == 200, response.text
        return response.json()["access_token"]

    async def key(self, admin: TenantAdmin, scopes: tuple[str, ...] = ("chat", "models")) -> tuple[str, str]:
        """(key id, full key) of a new key made through POST /admin/api-keys."""
        response = await self.client.post(
            "/admin/api-keys", json={"name": "test", "scopes": list(scopes)}, headers=admin.headers
        )
        assert response.status_code == 201, response.text
        return response.json()["id"], response.json()["key"]

    async def chat(self, key: str, **body: Any) -> httpx.Response:
        return await self.client.post(
            "/v1/chat/completions", json=chat_body(**body), headers=key_headers(key)
        )


HarnessFactory = Callable[..., AbstractAsyncContextManager[Harness]]


@pytest.fixture
def make_harness(settings: Settings, clock: ManualClock) -> HarnessFactory:
    """``async with make_harness(**settings_changes) as h``: an app with its own settings."""

    @asynccontextmanager
    async def make(**changes: Any) -> AsyncIterator[Harness]:
        # Validated (model_copy would not be), so e.g. a plain string becomes a SecretStr.
        application = create_app(Settings(**{**settings.model_dump(), **changes}), clock=clock)
        async with running(application):
            transport = httpx.ASGITransport(application)
            async with httpx.AsyncClient(transport=transport, base_url=BASE_URL) as client:
                yield Harness(application, client, clock)

    return make


@pytest.fixture
async def harness(make_harness: HarnessFactory) -> AsyncIterator[Harness]:
    async with make_harness() as h:
        yield h


class ScriptedBackend:
    """A backend that streams ``pieces`` and then fails with ``error`` (or completes, without one)."""

    name = "scripted"

    def __init__(self, pieces: list[str], error: AgentError | None = None, delay: float = 0.0) -> None:
        self.pieces, self.error, self.delay = pieces, error, delay
        self.calls = 0
        self.closed = False

    async def complete(self, request: ChatRequest) -> Completion:
        self.calls += 1
        if self.error is not None:
            raise self.error
        return Completion("".join(self.pieces), "stop", Usage(3, len(self.pieces)), request.model)

    async def stream(self, request: ChatRequest) -> AsyncIterator[Delta]:
        self.calls += 1
        try:
            for piece in self.pieces:
                if self.delay:
                    await asyncio.sleep(self.delay)
                yield Delta(piece)
            if self.error is not None:
                raise self.error
            yield Delta("", "stop")
        finally:
            self.closed = True


@pytest.fixture(params=["sqlite", "postgres"])
async def db(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Database]:
    """A migrated database on SQLite and on PostgreSQL (the usage writer's tests)."""
    url = request.getfixturevalue("postgres_url") if request.param == "postgres" else None
    settings = Settings(data_dir=tmp_path, redis_url=None, database_url=url)
    upgrade(settings)
    database = Database(settings)
    yield database
    await database.dispose()
