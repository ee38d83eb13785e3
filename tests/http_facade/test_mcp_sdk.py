"""The official ``mcp`` SDK client against a real uvicorn: every tool called, every resource read.

Three ways in: ``Client(url)`` (auto: probes ``server/discover`` and speaks 2026-07-28),
``Client(url, mode="legacy")`` (initialize handshake) and the low-level ``streamable_http_client``
with ``ClientSession``. The protocol version each one negotiates is asserted, so a server that
silently fell back to another era would fail.
"""

from __future__ import annotations

import json

import pytest
from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult

from tests.conftest import LiveServer
from tests.test_surfaces import CALLABLE, EXAMPLES, RESOURCE_URIS, TOOL_NAMES

MODERN = "2026-07-28"


def mcp_url(server: LiveServer) -> str:
    return f"{server.url}/api/mcp.php"


def assert_tool_result(name: str, result: CallToolResult) -> None:
    assert result.is_error is False, (name, result.content)
    assert isinstance(result.structured_content, dict) and result.structured_content
    # the text block carries the same object, for clients that ignore structuredContent
    assert json.loads(result.content[0].text) == result.structured_content


async def exercise(client: Client) -> None:
    """List, call every tool, read every resource: the whole surface through one client."""
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert sorted(tools) == sorted(TOOL_NAMES)
    for name, tool in tools.items():
        assert tool.description and tool.input_schema["type"] == "object"
        assert tool.output_schema and tool.output_schema["type"] == "object"
        if name in CALLABLE:  # the ACP tools need an agent platform (tests/commerce/test_mcp_binding.py)
            assert_tool_result(name, await client.call_tool(name, EXAMPLES[name]))
    resources = {str(r.uri): r for r in (await client.list_resources()).resources}
    assert sorted(resources) == sorted(RESOURCE_URIS)
    for uri, resource in resources.items():
        contents = (await client.read_resource(uri)).contents
        assert contents[0].mime_type == resource.mime_type
        assert len(contents[0].text) > 50
        if resource.mime_type == "application/json":
            json.loads(contents[0].text)


async def test_default_client_negotiates_the_modern_protocol_and_uses_every_capability(
    live_server: LiveServer,
) -> None:
    async with Client(mcp_url(live_server)) as client:
        assert client.protocol_version == MODERN  # the newer version the SDK negotiates works
        assert client.server_info is not None and client.server_info.name == "agentgate"
        await exercise(client)


async def test_legacy_client_runs_the_initialize_handshake(live_server: LiveServer) -> None:
    async with Client(mcp_url(live_server), mode="legacy") as client:
        assert client.protocol_version == "2025-11-25"
        assert "ask_agentgate" in (client.instructions or "")
        await exercise(client)


async def test_client_pinned_to_the_modern_version_works_without_probe(live_server: LiveServer) -> None:
    async with Client(mcp_url(live_server), mode=MODERN) as client:
        result = await client.call_tool("get_pricing", {"category": "plans"})
        assert_tool_result("get_pricing", result)
        assert {item["id"] for item in result.structured_content["items"]} >= {"starter", "professional"}


async def test_low_level_session_over_streamable_http(live_server: LiveServer) -> None:
    async with (
        streamable_http_client(mcp_url(live_server)) as (read, write),
        ClientSession(read, write) as session,
    ):
        init = await session.initialize()
        assert init.protocol_version == "2025-11-25"
        assert init.server_info.name == "agentgate"
        assert init.capabilities.tools is not None and init.capabilities.resources is not None
        listed = await session.list_tools()
        assert sorted(t.name for t in listed.tools) == sorted(TOOL_NAMES)
        for name in CALLABLE:
            assert_tool_result(name, await session.call_tool(name, EXAMPLES[name]))
        for uri in RESOURCE_URIS:
            assert (await session.read_resource(uri)).contents[0].text


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_unknown_tool_is_a_protocol_error_and_bad_arguments_a_tool_error(
    live_server: LiveServer, mode: str
) -> None:
    async with Client(mcp_url(live_server), mode=mode) as client:
        with pytest.raises(MCPError) as raised:
            await client.call_tool("no_such_tool", {})
        assert raised.value.code == -32602
        assert "no_such_tool" in raised.value.message and "get_pricing" in raised.value.message

        bad = await client.call_tool("get_pricing", {"category": "gadgets"})
        assert bad.is_error is True
        error = json.loads(bad.content[0].text)["error"]
        assert error["type"] == "validation_error" and error["param"] == "category"
        assert "category" in error["message"] and "plans" in error["message"]
        assert error["documentation_url"].startswith(live_server.url)


async def test_unknown_resource_is_a_protocol_error(live_server: LiveServer) -> None:
    async with Client(mcp_url(live_server), mode="legacy") as client:
        with pytest.raises(MCPError) as raised:
            await client.read_resource("kb://nothing")
        assert raised.value.code == -32002
        assert "kb://nothing" in raised.value.message


async def test_client_pointed_at_the_trailing_slash_url_works(live_server: LiveServer) -> None:
    async with Client(f"{mcp_url(live_server)}/", mode="legacy") as client:
        assert sorted(t.name for t in (await client.list_tools()).tools) == sorted(TOOL_NAMES)
        assert_tool_result("get_company_info", await client.call_tool("get_company_info", {}))
