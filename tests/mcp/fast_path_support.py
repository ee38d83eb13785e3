"""Two apps side by side, one with the MCP fast path off (the SDK answers everything) and one with it
on, and a raw POST that returns exactly what came back: status, header lines and body bytes."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from fastapi import FastAPI

from agent_server.foundation.settings import Settings
from http_facade.app import create_app
from http_facade.routes.mcp_fast import FastPathGate
from tests.conftest import BASE_URL, running

URL = "/api/mcp.php"
MODERN = "2026-07-28"
# No header (the SDK's default era, 2025-03-26), every handshake version, and 2026-07-28.
ERAS = [None, "2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", MODERN]
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "parity-test", "version": "1"},
}
NAME_PARAM = {"tools/call": "name", "resources/read": "uri", "prompts/get": "name"}
# Header lines whose value differs on every request by design: compared by presence only.
PER_REQUEST = frozenset({"x-request-id"})
JSON_ACCEPT = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


@dataclass(frozen=True)
class Answer:
    status: int
    headers: list[tuple[str, str]]  # every header line, in order
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Side:
    app: FastAPI
    client: httpx.AsyncClient

    @property
    def gate(self) -> FastPathGate | None:
        route = next(r for r in self.app.routes if getattr(r, "path", None) == URL)
        return route.endpoint.built.fast_path  # type: ignore[attr-defined]

    async def post(
        self, body: object, headers: dict[str, str] | list[tuple[str, str]], url: str = URL
    ) -> Answer:
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        response = await self.client.post(url, content=content, headers=headers)
        lines = [(k, "(per request)" if k in PER_REQUEST else v) for k, v in response.headers.multi_items()]
        return Answer(response.status_code, lines, response.content)


@asynccontextmanager
async def side(data_dir: Path, *, fast: bool, **settings: Any) -> AsyncIterator[Side]:
    config = Settings(
        data_dir=data_dir, public_base_url=BASE_URL, redis_url=None, mcp_fast_path=fast, **settings
    )
    async with (
        running(create_app(config)) as app,
        httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url=BASE_URL) as client,
    ):
        route = next(r for r in app.routes if getattr(r, "path", None) == URL)
        await route.endpoint.started()  # built at the first request otherwise (mcp_on_demand.py)
        yield Side(app, client)


def mcp_request(
    era: str | None, method: str, params: dict[str, Any] | None = None, id_: int | str = 1
) -> tuple[dict[str, Any], dict[str, str]]:
    """The body and headers a plain client of ``era`` sends (2026-07-28: envelope and routing headers)."""
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "method": method}
    headers = dict(JSON_ACCEPT)
    if params is not None:
        body["params"] = dict(params)
    if era is not None:
        headers["MCP-Protocol-Version"] = era
    if era == MODERN:
        body["params"] = {**body.get("params", {}), "_meta": ENVELOPE}
        headers["Mcp-Method"] = method
        if method in NAME_PARAM and params and NAME_PARAM[method] in params:
            headers["Mcp-Name"] = str(params[NAME_PARAM[method]])
    return body, headers
