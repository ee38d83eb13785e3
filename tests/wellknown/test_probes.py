"""Probes (spec 2.4, 4.1), metrics and the registration description."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from prometheus_client.parser import text_string_to_metric_families

from agent_server.foundation.settings import Settings
from agent_server.observability.metrics import Metrics
from http_facade import metrics as http_metrics
from http_facade.app import create_app
from http_facade.routes.probes import llm_check, probe
from tests.conftest import BASE_URL, running
from tests.wellknown.conftest import json_of, schema_validator

CHECKS = {"gateway", "database", "cache", "masterLlm"}


def health_json(response: httpx.Response) -> dict:
    assert response.headers["content-type"].startswith("application/health+json")
    doc = response.json()
    schema_validator("health").validate({**doc, "status": doc["status"].lower()})
    return doc


async def test_health_reports_each_dependency(client: httpx.AsyncClient) -> None:
    doc = json_of(await client.get("/health"))
    assert doc["status"] == "ok" and set(doc["checks"]) == CHECKS
    assert all(isinstance(v, str) and v.startswith("ok") for v in doc["checks"].values())
    ietf = await client.get("/health", headers={"Accept": "application/health+json"})
    assert ietf.status_code == 200
    assert health_json(ietf)["status"] == "pass"


async def test_health_is_degraded_when_a_dependency_fails_or_hangs(
    client: httpx.AsyncClient, app: FastAPI
) -> None:
    services = app.state.services

    async def broken() -> bool:
        raise ConnectionError("down")

    async def hanging() -> bool:
        await asyncio.sleep(30)
        return True

    services.settings.health_timeout_seconds = 0.05
    services.kv.ping, services.db.ping = broken, hanging
    doc = json_of(await client.get("/health"))
    assert doc["status"] == "degraded"
    assert doc["checks"]["cache"] == "error: ConnectionError" and doc["checks"]["database"] == "timeout"
    ietf = health_json(await client.get("/health", headers={"Accept": "application/health+json"}))
    assert ietf["status"] == "warn"  # degraded, still answering
    ready = await client.get("/health/ready")
    assert ready.status_code == 503 and health_json(ready)["status"] == "fail"


async def test_liveness_and_readiness(client: httpx.AsyncClient) -> None:
    live = await client.get("/health/live")
    assert live.status_code == 200 and health_json(live)["status"] == "pass"
    ready = await client.get("/health/ready")
    assert ready.status_code == 200 and health_json(ready)["status"] == "pass"


async def test_not_ready_before_start_up(settings: Settings) -> None:
    app = create_app(settings)  # no lifespan: migrations have not run
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url=BASE_URL) as c:
        response = await c.get("/health/ready")
        assert response.status_code == 503 and health_json(response)["status"] == "fail"
        assert (await c.get("/health/live")).status_code == 200


async def test_jwt_probe_signs_and_verifies(client: httpx.AsyncClient) -> None:
    response = await client.get("/health/jwt")
    doc = health_json(response)
    assert response.status_code == 200 and doc["status"] == "pass"


async def test_llm_check_is_defensive() -> None:
    class Pinging:
        name = "upstream"

        async def ping(self) -> bool:
            return False

    class Opaque:
        name = "upstream"

    assert (await probe(llm_check(Pinging()), 1))[0] == "error"
    assert (await probe(llm_check(Opaque()), 1))[0].startswith("unknown")


@pytest.fixture
async def metered(settings: Settings) -> AsyncIterator[tuple[FastAPI, httpx.AsyncClient]]:
    """The app plus two test routes that name a model and answer 429 and 502."""
    app = create_app(settings)

    async def limited(request: Request) -> JSONResponse:
        request.state.model = "agentgate-mock-small"
        return JSONResponse({"error": "slow down"}, status_code=429)

    async def upstream(request: Request) -> JSONResponse:
        request.state.model = 'odd"model\\name'
        return JSONResponse({"error": "bad gateway"}, status_code=502)

    app.add_api_route("/test/limited/{n}", limited, include_in_schema=False)
    app.add_api_route("/test/upstream", upstream, include_in_schema=False)
    async with running(app), httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url=BASE_URL) as c:
        yield app, c


async def test_metrics_count_by_route_template_and_model(metered: tuple[FastAPI, httpx.AsyncClient]) -> None:
    _, client = metered
    for n in range(3):
        await client.get(f"/test/limited/{n}")
    await client.get("/test/upstream")
    await client.get("/health")
    await client.get("/no/such/path")
    doc = json_of(await client.get("/metrics/"))
    by_route = {(r["route"], r["model"]): r for r in doc["routes"]}
    limited = by_route[("/test/limited/{n}", "agentgate-mock-small")]
    assert limited["requests"] == 3 and limited["rate_limited"] == 3
    assert by_route[("/test/upstream", 'odd"model\\name')]["upstream_errors"] == 1
    assert by_route[("(unmatched)", None)]["statuses"] == {"404": 1}
    health = by_route[("/health", None)]["latency_ms"]
    assert 0 < health["p50"] <= health["p99"] <= health["max"]
    assert doc["totals"]["rate_limited"] == 3 and doc["totals"]["upstream_errors"] == 1


async def test_prometheus_text_parses(metered: tuple[FastAPI, httpx.AsyncClient]) -> None:
    _, client = metered
    await client.get("/test/limited/1")
    await client.get("/test/upstream")
    response = await client.get("/metrics/prometheus")
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    families = {f.name: f for f in text_string_to_metric_families(response.text)}
    requests = families["agentgate_http_requests"]
    assert any(
        s.labels["route"] == "/test/limited/{n}" and s.labels["status"] == "429" for s in requests.samples
    )
    limited = families["agentgate_http_rate_limited"].samples
    assert sum(s.value for s in limited) == 1
    upstream = [s for s in families["agentgate_http_upstream_errors"].samples if s.value]
    assert upstream[0].labels["model"] == 'odd"model\\name'
    assert families["agentgate_http_request_duration_seconds"].type == "histogram"


def test_metrics_memory_is_bounded() -> None:
    metrics = Metrics(max_series=10)
    for i in range(1000):
        metrics.observe("POST", "/v1/chat/completions", f"model-{i}", 200, 0.01)
    assert len(metrics.series) <= 11
    assert sum(s.count for s in metrics.series) == 1000


async def test_consultant_code_validation(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, public_base_url=BASE_URL, consultant_codes="ACME-2026, partner7")
    app = create_app(settings)
    async with running(app), httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url=BASE_URL) as c:
        assert json_of(await c.get("/consultant-code/validate?code=acme-2026"))["valid"] is True
        assert json_of(await c.get("/consultant-code/validate?code=PARTNER7"))["valid"] is True
        assert json_of(await c.get("/consultant-code/validate?code=nope"))["valid"] is False
        for query in ("", "?code=", "?code=%20"):
            missing = await c.get(f"/consultant-code/validate{query}")
            assert missing.status_code == 400 and missing.json()["error"]["param"] == "code"


async def test_the_mcp_route_names_its_series_without_matching_again(
    metered: tuple[FastAPI, httpx.AsyncClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The MCP endpoint's raw route records itself in the scope, as FastAPI's routes do: no second scan."""
    _, client = metered

    def no_second_scan(*_: object) -> str:
        raise AssertionError("the request was matched against the routes again")

    monkeypatch.setattr(http_metrics, "_match", no_second_scan)
    ping = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    answered = await client.post("/api/mcp.php", json=ping, headers={"Accept": "application/json"})
    assert answered.status_code == 200
    doc = json_of(await client.get("/metrics/"))
    assert any(r["route"] == "/api/mcp.php" and r["requests"] == 1 for r in doc["routes"]), doc["routes"]
