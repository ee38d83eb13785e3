"""Shared pieces of the MCP tests: raw JSON-RPC posts in every era, SSE parsing, live servers, Node tools."""

from __future__ import annotations

import json
import shutil
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from agent_server.foundation.settings import Settings
from agent_server.knowledge.pack import shipped_content_dir
from tests.conftest import LiveServer, require_service

URL = "/api/mcp.php"
MODERN = "2026-07-28"
HANDSHAKE = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]
ERAS = [*HANDSHAKE, MODERN]
BOTH = "application/json, text/event-stream"
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "agentgate-tests", "version": "1"},
}
SESSION_VERSION = "2025-11-25"  # the first handshake version with resumable (primed) streams
WAIT = 10.0  # seconds an awaited event may take before a test fails
NAME_PARAM = {"tools/call": "name", "resources/read": "uri", "prompts/get": "name"}

ROOT = Path(__file__).resolve().parents[2]
NODE = ROOT / "tests/accounts/oidc_provider/node_modules/.bin/node"
NODE_TOOLS = ROOT / "tests/mcp/node/node_modules"


def request(
    method: str, params: dict[str, Any] | None = None, *, era: str = "2025-06-18", id_: Any = 1
) -> tuple[dict, dict[str, str]]:
    """A JSON-RPC request and its headers for one protocol era (2026-07-28: envelope and routing headers)."""
    params = dict(params or {})
    headers = {"Content-Type": "application/json", "Accept": BOTH, "MCP-Protocol-Version": era}
    if era == MODERN:
        params["_meta"] = {**ENVELOPE, **params.get("_meta", {})}
        headers["Mcp-Method"] = method
        if method in NAME_PARAM and NAME_PARAM[method] in params:
            headers["Mcp-Name"] = str(params[NAME_PARAM[method]])
    body = {"jsonrpc": "2.0", "id": id_, "method": method, **({"params": params} if params else {})}
    return body, headers


async def rpc(
    client: httpx.AsyncClient,
    method: str,
    params: dict | None = None,
    *,
    era: str = "2025-06-18",
    **headers: str,
) -> httpx.Response:
    body, base = request(method, params, era=era)
    return await client.post(URL, json=body, headers={**base, **headers})


def events(response: httpx.Response) -> list[dict[str, Any]]:
    """The JSON-RPC messages of an SSE answer, in order."""
    return [
        json.loads(line[5:])
        for line in response.text.splitlines()
        if line.startswith("data:") and line[5:].strip()
    ]


def answer(response: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC response, whether it came as JSON or as the last event of a stream."""
    if response.headers["content-type"].startswith("text/event-stream"):
        return events(response)[-1]
    return response.json()


@contextmanager
def live(settings: Settings, registry_factory: Any = None) -> Iterator[LiveServer]:
    """A real uvicorn; ``registry_factory`` replaces ``build_registry`` (the conformance fixtures)."""
    with pytest.MonkeyPatch.context() as patch:
        if registry_factory is not None:
            patch.setattr("http_facade.app.build_registry", registry_factory)
        with LiveServer(settings) as server:
            yield server


async def eventually(check: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    """Wait until a condition outside this event loop holds (a server in another thread, Redis)."""
    for _ in range(int(timeout / 0.02)):
        if check():
            return
        await anyio.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def node_tool(*parts: str) -> Path:
    """A Node program from tests/mcp/node (installed by tests/support/deps/mcp_tools.sh)."""
    script = NODE_TOOLS.joinpath(*parts)
    missing = [str(p) for p in (NODE, script) if not p.exists()]
    require_service(
        "Node 22 and the MCP tools",
        f"missing {missing}; run sh tests/support/deps/mcp_tools.sh" if missing else None,
    )
    return script


# Stateful sessions over a live server, with streamed SSE


async def sse(response: httpx.Response) -> AsyncIterator[tuple[str | None, dict[str, Any] | None]]:
    """(event id, JSON-RPC message) per event; a priming event has no message."""
    event_id, data = None, ""
    async for line in response.aiter_lines():
        if line.startswith("id:"):
            event_id = line[3:].strip()
        elif line.startswith("data:"):
            data += line[5:].strip()
        elif line == "" and (event_id or data):
            yield event_id, json.loads(data) if data else None
            event_id, data = None, ""


def edit(content: Path, name: str | None = None, old: str = "", new: str = "") -> None:
    """Override one file of the shipped pack with an edited copy; without a name, drop every override."""
    if name is None:
        shutil.rmtree(content)
        content.mkdir()
        return
    text = (shipped_content_dir() / name).read_text(encoding="utf-8")
    assert old in text
    (content / name).write_text(text.replace(old, new, 1), encoding="utf-8")


class Session:
    def __init__(self, client: httpx.AsyncClient, session_id: str) -> None:
        self.client, self.id = client, session_id
        self.headers = {"Mcp-Session-Id": session_id, "MCP-Protocol-Version": SESSION_VERSION}

    async def call(self, method: str, params: dict | None = None, id_: int = 2) -> list[dict]:
        """POST a request; every message of its stream, the response last."""
        body = {"jsonrpc": "2.0", "id": id_, "method": method, **({"params": params} if params else {})}
        response = await self.client.post(URL, json=body, headers={**self.headers, "Accept": BOTH})
        assert response.status_code == 200, response.text
        return [
            json.loads(line[5:])
            for line in response.text.splitlines()
            if line.startswith("data:") and line[5:].strip()
        ]

    def stream(self, **headers: str) -> Any:
        return self.client.stream(
            "GET", URL, headers={**self.headers, "Accept": "text/event-stream", **headers}
        )


async def open_session(client: httpx.AsyncClient) -> tuple[Session, dict]:
    params = {
        "protocolVersion": SESSION_VERSION,
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}
    response = await client.post(URL, json=body, headers={"Accept": BOTH, "Content-Type": "application/json"})
    assert response.headers["content-type"].startswith("text/event-stream")
    session = Session(client, response.headers["mcp-session-id"])
    result = [
        json.loads(line[5:])
        for line in response.text.splitlines()
        if line.startswith("data:") and line[5:].strip()
    ]
    notified = await client.post(
        URL,
        json={"jsonrpc": "2.0", "method": "notifications/initialized"},
        headers={**session.headers, "Accept": BOTH},
    )
    assert notified.status_code == 202
    return session, result[-1]["result"]
