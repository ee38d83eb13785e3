"""The MCP endpoint's exact routes skip the router (http_facade/exact_routes.py) but not what every
request passes: the edge's headers and metrics, the exception handlers and the last-resort 500."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy.exc import OperationalError

from http_facade.routes.mcp import MCPEndpoint
from tests.conftest import BASE_URL

RPC = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


@pytest.fixture
async def lenient(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    """A client that gets the answer of an app error instead of the error raised in the test."""
    transport = httpx.ASGITransport(app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url=BASE_URL) as c:
        yield c


async def test_an_mcp_call_gets_the_edges_headers_and_is_counted_under_its_route(
    client: httpx.AsyncClient,
) -> None:
    for path in ("/api/mcp.php", "/api/mcp.php/"):
        answer = await client.post(path, json=RPC, headers={"X-Request-Id": "exact-route-1"})
        assert answer.status_code == 200 and answer.json()["result"]["tools"]
        assert answer.headers["x-request-id"] == "exact-route-1"
        assert answer.headers["mcp-version"] and answer.headers["vary"] == "Origin"
    routes = (await client.get("/metrics/")).json()["routes"]
    counted = {(r["method"], r["route"]): r["requests"] for r in routes}
    assert counted[("POST", "/api/mcp.php")] == 1 and counted[("POST", "/api/mcp.php/")] == 1


async def test_other_methods_are_the_routers_405(client: httpx.AsyncClient) -> None:
    answer = await client.put("/api/mcp.php", json=RPC)
    assert answer.status_code == 405
    assert "POST" in answer.headers["allow"] and answer.json()["error"]["type"]


async def test_a_crash_is_the_500_envelope(
    lenient: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def crash(*_: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(MCPEndpoint, "__call__", crash)
    answer = await lenient.post("/api/mcp.php", json=RPC)
    assert answer.status_code == 500
    assert answer.json()["error"]["code"] == "SERVER_ERROR" and "boom" not in answer.text


async def test_the_exception_handlers_apply(
    lenient: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def database_gone(*_: object) -> None:
        raise OperationalError("SELECT 1", {}, ConnectionRefusedError("refused"), connection_invalidated=True)

    monkeypatch.setattr(MCPEndpoint, "__call__", database_gone)
    answer = await lenient.post("/api/mcp.php", json=RPC)
    assert answer.status_code == 503 and answer.headers["retry-after"] == "5"
