"""Every capability appears on every surface, and gives the same result wherever it is called."""

from __future__ import annotations

import json

import httpx
import pytest

from agent_server.capabilities.registry import Registry
from agent_server.foundation.settings import Settings
from tools import build_registry

# One valid call per tool; a new tool without an example fails test_every_tool_has_an_example.
EXAMPLES: dict[str, dict] = {
    "ask_agentgate": {"query": "How do I rotate my API key?"},
    "list_models": {},
    "get_pricing": {"category": "consulting"},
    "faq_lookup": {"query": "rate limits", "limit": 2},
    "get_weather": {"location": "Berlin"},
    "get_company_info": {},
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}
# The read-only checks share one app per module (module_client in tests/conftest.py).
pytestmark = pytest.mark.asyncio(loop_scope="module")


def registry() -> Registry:
    return build_registry(Settings())


TOOL_NAMES = [t.name for t in registry().tools]
RESOURCE_URIS = [r.uri for r in registry().resources]


async def mcp(client: httpx.AsyncClient, method: str, params: dict | None = None) -> dict:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, **({"params": params} if params else {})}
    response = await client.post("/api/mcp.php", json=body, headers=MCP_HEADERS)
    assert response.status_code == 200, response.text
    assert response.headers["MCP-Version"] == "2025-06-18"
    return response.json()


async def test_every_tool_has_an_example() -> None:
    assert sorted(EXAMPLES) == sorted(TOOL_NAMES)


async def test_registry_holds_the_six_tools_and_eight_resources_of_the_spec() -> None:
    assert len(TOOL_NAMES) == 6 and len(RESOURCE_URIS) == 8
    names = {r.name for r in registry().resources}
    assert names == {
        "KB-core",
        "KB-full",
        "pricing/table",
        "faq/catalog",
        "compliance/matrix",
        "api/catalog",
        "company/info",
        "models/catalog",
    }


@pytest.mark.parametrize("name", TOOL_NAMES)
async def test_tool_is_listed_on_every_surface(module_client: httpx.AsyncClient, name: str) -> None:
    client = module_client
    listed = (await mcp(client, "tools/list"))["result"]["tools"]
    assert name in {t["name"] for t in listed}
    openai = (await client.get("/api/tools.php", params={"dialect": "openai"})).json()["tools"]
    assert name in {t["function"]["name"] for t in openai}
    anthropic = (await client.get("/api/tools.php", params={"dialect": "anthropic"})).json()["tools"]
    assert name in {t["name"] for t in anthropic}
    gemini = (await client.get("/api/tools.php", params={"dialect": "gemini"})).json()["tools"]
    assert name in {d["name"] for d in gemini[0]["functionDeclarations"]}
    index = (await client.get("/api/capabilities.php")).json()["capabilities"]
    assert name in {c["name"] for c in index if c["kind"] == "tool"}
    manifest = (await client.get("/api/mcp.php")).json()
    assert name in {t["name"] for t in manifest["tools"]}


@pytest.mark.parametrize("name", TOOL_NAMES)
async def test_tool_gives_the_same_result_over_mcp_and_http(
    module_client: httpx.AsyncClient, name: str
) -> None:
    client = module_client
    arguments = EXAMPLES[name]
    over_mcp = (await mcp(client, "tools/call", {"name": name, "arguments": arguments}))["result"]
    assert over_mcp.get("isError") is False
    over_http = await client.post("/api/tools/call", json={"name": name, "arguments": arguments})
    assert over_http.status_code == 200, over_http.text
    assert over_http.json()["result"] == over_mcp["structuredContent"]
    assert json.loads(over_mcp["content"][0]["text"]) == over_mcp["structuredContent"]


@pytest.mark.parametrize("uri", RESOURCE_URIS)
async def test_resource_is_listed_and_readable(module_client: httpx.AsyncClient, uri: str) -> None:
    client = module_client
    listed = (await mcp(client, "resources/list"))["result"]["resources"]
    entry = next(r for r in listed if r["uri"] == uri)
    assert entry["description"] and entry["mimeType"]
    contents = (await mcp(client, "resources/read", {"uri": uri}))["result"]["contents"]
    assert contents[0]["mimeType"] == entry["mimeType"]
    text = contents[0]["text"]
    assert len(text) > 50
    if entry["mimeType"] == "application/json":
        json.loads(text)
    index = (await client.get("/api/capabilities.php")).json()["capabilities"]
    assert uri in {c.get("uri") for c in index if c["kind"] == "resource"}


async def test_ask_tool_is_named_after_the_service(tmp_path) -> None:
    settings = Settings(data_dir=tmp_path, service_name="acme")
    assert "ask_acme" in {t.name for t in build_registry(settings).tools}


async def test_tool_and_resource_counts_match_between_mcp_and_index(module_client: httpx.AsyncClient) -> None:
    client = module_client
    index = (await client.get("/api/capabilities.php")).json()["capabilities"]
    tools = (await mcp(client, "tools/list"))["result"]["tools"]
    resources = (await mcp(client, "resources/list"))["result"]["resources"]
    assert len(index) == len(tools) + len(resources) == 14
