"""Fixtures of the public site API tests: an app on a ManualClock, clients per IP and User-Agent,
the in-memory or Redis backend (unique key prefix per test, keys removed afterwards)."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import func
from sqlmodel import SQLModel, select

from agent_server.foundation.clock import ManualClock
from agent_server.foundation.settings import Settings
from agent_server.site.build import Site
from http_facade.app import create_app
from tests.conftest import BASE_URL, running

ORIGIN = "http://localhost:5173"
UA = "site-test/1.0"
ClientFactory = Callable[..., httpx.AsyncClient]


@pytest.fixture(params=["memory"])
def backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
async def site_settings(
    tmp_path: Path, backend: str, request: pytest.FixtureRequest
) -> AsyncIterator[Settings]:
    """Sandbox settings. ``backend``: ``memory`` (SQLite, in-memory KV), ``redis`` (SQLite, a real
    Redis under a key prefix of this test only) or ``production`` (Redis and a fresh PostgreSQL)."""
    settings = Settings(data_dir=tmp_path, public_base_url=BASE_URL, redis_url=None, database_url=None)
    if backend == "memory":
        yield settings
        return
    import redis.asyncio as redis

    url = request.getfixturevalue("redis_url")
    prefix = f"agentgate-site-test:{uuid.uuid4().hex}:"
    update: dict[str, Any] = {"redis_url": url, "kv_prefix": prefix, "redis_timeout_seconds": 5.0}
    if backend == "production":
        update["database_url"] = request.getfixturevalue("postgres_url")
    yield settings.model_copy(update=update)
    client = redis.from_url(url)
    keys = [key async for key in client.scan_iter(match=f"{prefix}*")]
    if keys:
        await client.delete(*keys)
    await client.aclose()


@pytest.fixture
def configure() -> dict[str, Any]:
    """Tests put settings overrides here before ``site_app`` is built."""
    return {}


@pytest.fixture
async def site_app(
    site_settings: Settings, configure: dict[str, Any], clock: ManualClock
) -> AsyncIterator[FastAPI]:
    async with running(create_app(site_settings.model_copy(update=configure), clock=clock)) as app:
        yield app


@pytest.fixture
async def client_for(site_app: FastAPI) -> AsyncIterator[ClientFactory]:
    """``client_for(ip, ua)``: a client whose requests come from that address and User-Agent."""
    clients: list[httpx.AsyncClient] = []

    def make(ip: str = "1.2.3.4", ua: str = UA, **headers: str) -> httpx.AsyncClient:
        transport = httpx.ASGITransport(site_app, client=(ip, 123))
        client = httpx.AsyncClient(
            transport=transport, base_url=BASE_URL, headers={"User-Agent": ua, **headers}
        )
        clients.append(client)
        return client

    yield make
    for client in clients:
        await client.aclose()


@pytest.fixture
def web(client_for: ClientFactory) -> httpx.AsyncClient:
    return client_for()


def site_of(app: FastAPI) -> Site:
    return app.state.site


async def count_rows(app: FastAPI, table: type[SQLModel]) -> int:
    async with site_of(app).services.db.session() as session:
        return int((await session.execute(select(func.count()).select_from(table))).scalar_one())


def assert_envelope(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    """Spec 7.2: every 4xx/5xx is ``{error: {message, type, code, documentation_url, ...}}``."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    error = response.json()["error"]
    assert error["code"] == code, error
    assert error["message"] and error["documentation_url"].endswith(f"#{code.lower()}")
    return error


async def wait_for_job(
    client: httpx.AsyncClient, job_id: str, *, until: tuple[str, ...] = ("succeeded", "failed")
) -> dict:
    """Poll the job (the worker runs on the real event loop) until it reaches one of ``until``."""
    for _ in range(500):
        body = (await client.get(f"/api/jobs/{job_id}")).json()
        if body.get("status") in until:
            return body
        await asyncio.sleep(0.01)
    raise AssertionError(f"job {job_id} stuck: {body}")


def parse_sse(text: str) -> list[tuple[str, Any]]:
    """(event, data) pairs of an event stream; comment lines (pings) are skipped."""
    events = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        name, data = "message", []
        for line in block.split("\n"):
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].strip())
        if data:
            events.append((name, json.loads("\n".join(data))))
    return events
