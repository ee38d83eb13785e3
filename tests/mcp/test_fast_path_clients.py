"""The official ``mcp`` SDK client against a real uvicorn with the fast path on: in every client mode
the hot calls are answered by the fast path (its gate counts them) and the client gets what it expects."""

from __future__ import annotations

import json

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from http_facade.routes.mcp_fast import FastPathGate
from tests.conftest import LiveServer
from tests.test_surfaces import CALLABLE, EXAMPLES, RESOURCE_URIS, TOOL_NAMES


def gate_of(server: LiveServer) -> FastPathGate:
    """The server's gate; its endpoint is built by the first MCP request (a client's first)."""
    app = server.server.config.app
    route = next(r for r in app.routes if getattr(r, "path", None) == "/api/mcp.php")
    gate = route.endpoint.built.fast_path
    assert isinstance(gate, FastPathGate)
    return gate


@pytest.mark.parametrize(("mode", "version"), [("auto", "2026-07-28"), ("legacy", "2025-11-25")])
async def test_sdk_client_is_served_by_the_fast_path(
    live_server: LiveServer, mode: str, version: str
) -> None:
    async with Client(f"{live_server.url}/api/mcp.php", mode=mode) as client:
        assert client.protocol_version == version
        gate = gate_of(live_server)
        served = gate.served
        assert sorted(t.name for t in (await client.list_tools()).tools) == sorted(TOOL_NAMES)
        for name in CALLABLE:
            result = await client.call_tool(name, EXAMPLES[name])
            assert (
                result.is_error is False and json.loads(result.content[0].text) == result.structured_content
            )
        for uri in RESOURCE_URIS:
            assert (await client.read_resource(uri)).contents[0].text
        with pytest.raises(MCPError) as raised:
            await client.call_tool("no_such_tool", {})
        assert raised.value.code == -32602
        assert gate.served == served + 1 + len(CALLABLE) + len(RESOURCE_URIS) + 1
