"""/health and /health/ready report unreachable upstream LLMs, from checks made in the background.

The upstreams are real servers on loopback, stopped and restarted on their port. Tests drive the
checks with ``check_all`` (what the background loop runs every interval) instead of waiting for
the interval; one test lets the loop itself notice, with a short interval and a bounded poll.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from agent_server.foundation.settings import Settings
from agent_server.foundation.settings_llm import UpstreamConfig
from agent_server.llm.health import EXTRAS_KEY, UpstreamHealth
from http_facade.app import create_app
from tests.conftest import BASE_URL, running
from tests.llm.conftest import config
from tests.llm.loopback import HttpServer, Reply, Request, chat_upstream

HEALTH_JSON = {"Accept": "application/health+json"}


@pytest.fixture
async def primary() -> AsyncIterator[HttpServer]:
    server = await HttpServer(chat_upstream).start()
    yield server
    await server.stop()


@pytest.fixture
async def secondary() -> AsyncIterator[HttpServer]:
    server = await HttpServer(chat_upstream).start()
    yield server
    await server.stop()


def settings_for(tmp_path: Path, *upstreams: Any, **extra: Any) -> Settings:
    # By default the loop runs its first round only; tests call check_all for the next ones.
    extra = {"llm_health_check_seconds": 3600, **extra}
    return Settings(
        data_dir=tmp_path,
        public_base_url=BASE_URL,
        redis_url=None,
        database_url=None,
        upstreams=list(upstreams),
        **extra,
    )


@pytest.fixture
async def gateway(tmp_path: Path, primary: HttpServer, secondary: HttpServer) -> AsyncIterator[FastAPI]:
    """``shared-model`` falls back from primary to secondary; ``solo-model`` has primary only."""
    upstreams = (
        config(primary.base_url, "primary", models=["shared-model", "solo-model"]),
        config(secondary.base_url, "secondary", models=["shared-model"]),
    )
    async with running(create_app(settings_for(tmp_path, *upstreams))) as app:
        yield app


def monitor_of(app: FastAPI) -> UpstreamHealth:
    return app.state.services.extras[EXTRAS_KEY]


async def health(app: FastAPI) -> tuple[dict[str, Any], dict[str, Any], httpx.Response]:
    """``/health`` (spec 2.4), ``/health`` in the IETF format, and ``/health/ready``."""
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url=BASE_URL) as client:
        spec = (await client.get("/health")).json()
        ietf = (await client.get("/health", headers=HEALTH_JSON)).json()
        return spec, ietf, await client.get("/health/ready")


async def test_master_llm_follows_its_upstreams(
    gateway: FastAPI, primary: HttpServer, secondary: HttpServer
) -> None:
    monitor = monitor_of(gateway)
    await monitor.check_all()
    spec, _, ready = await health(gateway)
    assert spec["status"] == "ok" and spec["checks"]["masterLlm"] == "ok"
    assert ready.status_code == 200 and ready.json()["status"] == "pass"
    assert {r.target for r in primary.requests} == {"/v1/models"}  # the check, with our key
    assert primary.requests[-1].headers["authorization"].startswith("Bearer sk-upstream-")

    await primary.stop()  # solo-model has no backend left; shared-model falls back
    await monitor.check_all()
    spec, ietf, ready = await health(gateway)
    assert spec["status"] == "degraded"
    assert spec["checks"]["masterLlm"] == (
        "degraded: unreachable: primary (connection refused); 1 of 2 models have no reachable backend"
    )
    assert ietf["status"] == "warn" and ietf["checks"]["masterLlm:responseTime"][0]["status"] == "warn"
    assert ready.status_code == 200  # an upstream outage must not empty the load balancer

    await secondary.stop()
    await monitor.check_all()
    spec, ietf, ready = await health(gateway)
    llm = spec["checks"]["masterLlm"]
    assert spec["status"] == "degraded" and llm.startswith("error: no reachable upstream: ")
    assert "primary (connection refused)" in llm and "secondary (connection refused)" in llm
    assert ietf["checks"]["masterLlm:responseTime"][0]["status"] == "fail" and ietf["status"] == "warn"
    doc = ready.json()
    assert ready.status_code == 200 and doc["status"] == "warn"
    assert doc["checks"]["masterLlm"][0]["output"] == llm  # shown, not counted
    async with httpx.AsyncClient(transport=httpx.ASGITransport(gateway), base_url=BASE_URL) as client:
        status = (await client.get("/api/status.php")).json()  # the public status page agrees
    assert status["status"] == "warn" and status["checks"]["llm:responseTime"][0]["status"] == "fail"

    await primary.start()
    await secondary.start()
    await monitor.check_all()
    spec, _, ready = await health(gateway)
    assert spec["status"] == "ok" and spec["checks"]["masterLlm"] == "ok"
    assert ready.json()["status"] == "pass"


async def test_an_answer_of_the_wrong_kind_counts_as_down(tmp_path: Path) -> None:
    status = 401

    async def handler(request: Request) -> Reply:
        return Reply(status, {"Content-Type": "application/json"}, b"{}")

    server = await HttpServer(handler).start()
    try:
        settings = settings_for(tmp_path, config(server.base_url, "only", models=["m"]))
        async with running(create_app(settings)) as app:
            monitor = monitor_of(app)
            seen = {}
            for status in (401, 503, 404):
                await monitor.check_all()  # runs after any round under way: its answer is the last
                seen[status] = (await health(app))[0]["checks"]["masterLlm"]
        assert seen == {
            401: "error: no reachable upstream: only (credentials rejected (HTTP 401))",
            503: "error: no reachable upstream: only (HTTP 503)",
            404: "ok",  # no model list there, but the server answers
        }
    finally:
        await server.stop()


async def test_without_a_key_of_ours_a_401_still_means_reachable() -> None:
    async def handler(request: Request) -> Reply:
        return Reply(401 if "authorization" not in request.headers else 200, {}, b"{}")

    server = await HttpServer(handler).start()
    try:
        keyless = UpstreamHealth(
            [UpstreamConfig(name="byok", base_url=server.base_url)]
        )  # callers bring keys
        async with keyless.running():
            await keyless.check_all()
        assert keyless.summary() == "ok" and "authorization" not in server.requests[-1].headers
    finally:
        await server.stop()


async def test_a_silent_upstream_times_out_without_slowing_health(tmp_path: Path) -> None:
    """An upstream that accepts connections and never answers: the check gives up after its timeout
    while /health, which only reads the last result, answers at once."""
    accepted = asyncio.Event()

    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.set()
        await reader.read()  # until the client gives up
        writer.close()

    silent = await asyncio.start_server(hold, "127.0.0.1", 0)
    port = silent.sockets[0].getsockname()[1]
    try:
        settings = settings_for(
            tmp_path,
            config(f"http://127.0.0.1:{port}/v1", "silent", models=["m"]),
            llm_health_timeout_seconds=1.5,
        )
        async with running(create_app(settings)) as app:
            await asyncio.wait_for(accepted.wait(), 5)  # the first round is under way
            spec, _, _ = await health(app)
            # Still pending: /health read the state instead of waiting for the 1.5 s check.
            assert spec["checks"]["masterLlm"] == "unknown (first check pending)"
            await monitor_of(app).check_all()
            spec, _, _ = await health(app)
        assert spec["checks"]["masterLlm"] == "error: no reachable upstream: silent (timeout)"
    finally:
        silent.close()


async def test_the_background_loop_notices_by_itself(tmp_path: Path, primary: HttpServer) -> None:
    settings = settings_for(
        tmp_path, config(primary.base_url, "primary", models=["m"]), llm_health_check_seconds=0.05
    )

    async def master_llm(app: FastAPI, prefix: str) -> str:
        deadline = time.monotonic() + 5
        while True:
            value = (await health(app))[0]["checks"]["masterLlm"]
            if value.startswith(prefix) or time.monotonic() > deadline:
                return value
            await asyncio.sleep(0.02)

    async with running(create_app(settings)) as app:
        assert await master_llm(app, "ok") == "ok"
        await primary.stop()
        assert (await master_llm(app, "error")).startswith("error: no reachable upstream: primary")
        await primary.start()
        assert await master_llm(app, "ok") == "ok"


async def test_sandbox_with_only_the_mock_is_ok(tmp_path: Path) -> None:
    async with running(create_app(settings_for(tmp_path))) as app:
        spec, _, ready = await health(app)
    assert spec["checks"]["masterLlm"] == "ok (mock)" and spec["status"] == "ok"
    assert json.loads(ready.text)["status"] == "pass"
