"""The gate of the MCP endpoint finds a tenant tool however the request spells its name: a public
call skips the second parse only when no tenant tool can be named (``TenantTools.may_be_named``)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx
import pytest

from agent_server.foundation.settings import Settings
from tests.conftest import BASE_URL
from tests.pages.dashboard import Dash, dashboard_world


@pytest.fixture
async def dash(settings: Settings) -> AsyncIterator[Dash]:
    async with dashboard_world(settings) as world:
        yield world


def escaped(name: str) -> str:
    """The name with every letter as a JSON \\u escape: the same string once parsed."""
    return "".join(f"\\u{ord(c):04x}" for c in name)


@pytest.mark.parametrize("spelled", ["plain", "escaped"])
async def test_a_tenant_tool_called_anonymously_is_a_401_however_it_is_spelled(
    dash: Dash, spelled: str
) -> None:
    name = "get_usage_this_month" if spelled == "plain" else escaped("get_usage_this_month")
    body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"NAME","arguments":{}}}'
    body = body.replace("NAME", name)
    assert json.loads(body)["params"]["name"] == "get_usage_this_month"
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(dash.app), base_url=BASE_URL) as mcp:
        refused = await mcp.post("/api/mcp.php", content=body, headers=headers)
        assert refused.status_code == 401, refused.text
        assert 'scope="usage:read"' in refused.headers["www-authenticate"]
        public = body.replace(name, "get_company_info")
        answered = await mcp.post("/api/mcp.php", content=public, headers=headers)
        assert answered.status_code == 200 and "structuredContent" in answered.text
