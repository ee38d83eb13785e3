"""Declared capabilities equal served ones (stateless default), the manifest says the same, and answers
come as SSE when the client accepts only SSE or asks for notifications, in every protocol era."""

from __future__ import annotations

import httpx
import pytest

from agent_server.foundation.settings import Settings
from tests.mcp.support import ERAS, HANDSHAKE, MODERN, URL, answer, events, request, rpc

pytestmark = pytest.mark.asyncio(loop_scope="module")
STATELESS = {
    "tools": {"listChanged": False},
    "resources": {"subscribe": False, "listChanged": False},
    "prompts": {"listChanged": False},
    "completions": {},
}
# One call per capability that proves it is served.
SERVED_BY = {
    "tools": ("tools/list", {}),
    "resources": ("resources/templates/list", {}),
    "prompts": ("prompts/list", {}),
    "completions": (
        "completion/complete",
        {
            "ref": {"type": "ref/prompt", "name": "choose_gateway_plan"},
            "argument": {"name": "plan", "value": "s"},
        },
    ),
}


async def initialize(client: httpx.AsyncClient, version: str) -> dict:
    params = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    body, headers = request("initialize", params, era=version)
    response = await client.post(URL, json=body, headers=headers)
    assert "mcp-session-id" not in response.headers  # stateless by default
    return answer(response)["result"]


@pytest.mark.parametrize("version", HANDSHAKE)
async def test_handshake_capabilities_are_exactly_what_is_served(
    module_client: httpx.AsyncClient, version: str
) -> None:
    result = await initialize(module_client, version)
    assert result["protocolVersion"] == version
    assert result["capabilities"] == STATELESS
    for capability, (method, params) in SERVED_BY.items():
        assert "result" in answer(await rpc(module_client, method, params, era=version)), capability
    # not declared without a session, so not served either
    for method, params in [
        ("logging/setLevel", {"level": "info"}),
        ("resources/subscribe", {"uri": "kb://core"}),
    ]:
        assert answer(await rpc(module_client, method, params, era=version))["error"]["code"] == -32601


async def test_modern_discovery_declares_logging_and_listen_streams(module_client: httpx.AsyncClient) -> None:
    result = answer(await rpc(module_client, "server/discover", era=MODERN))["result"]
    capabilities = result["capabilities"]
    assert result["supportedVersions"] == [MODERN]
    assert capabilities["logging"] == {} and capabilities["completions"] == {}
    assert capabilities["resources"] == {"subscribe": True, "listChanged": True}  # via subscriptions/listen
    for capability, (method, params) in SERVED_BY.items():
        assert "result" in answer(await rpc(module_client, method, params, era=MODERN)), capability
    gone = answer(await rpc(module_client, "logging/setLevel", {"level": "info"}, era=MODERN))
    assert gone["error"]["code"] == -32601  # 2026-07-28 opts into logging per request instead


async def test_the_manifest_declares_what_initialize_declares(module_client: httpx.AsyncClient) -> None:
    manifest = (await module_client.get(URL)).json()
    assert manifest["capabilities"] == STATELESS
    assert manifest["supportedProtocolVersions"] == ERAS
    assert manifest["remotes"][0]["supportedProtocolVersions"] == ERAS
    transport = {"type": "streamable-http", "url": manifest["endpoint"], "stateless": True, "sessions": False}
    assert manifest["transport"] == transport
    assert {p["name"] for p in manifest["prompts"]} >= {"plan_consulting_engagement", "choose_gateway_plan"}
    assert {t["uriTemplate"] for t in manifest["resourceTemplates"]} == {
        "faq://entry/{id}",
        "pricing://table/{category}",
    }


@pytest.fixture(scope="module")
def module_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """A public deployment: every address in the manifest comes from the public base URL."""
    return Settings(
        data_dir=tmp_path_factory.mktemp("app"),
        public_base_url="https://mcp.agentgate.example:8443",
        allowed_hosts=["127.0.0.1:*"],
        redis_url=None,
        database_url=None,
    )


async def test_the_manifest_is_built_from_the_public_base_url(module_client: httpx.AsyncClient) -> None:
    manifest = (await module_client.get(URL)).json()
    endpoint = "https://mcp.agentgate.example:8443/api/mcp.php"
    assert manifest["endpoint"] == endpoint and manifest["remotes"][0]["url"] == endpoint
    assert "8000" not in str(manifest)


@pytest.mark.parametrize("era", ERAS)
async def test_a_client_accepting_only_sse_gets_sse(module_client: httpx.AsyncClient, era: str) -> None:
    for method, params in [("tools/list", {}), ("tools/call", {"name": "get_company_info", "arguments": {}})]:
        response = await rpc(module_client, method, params, era=era, Accept="text/event-stream")
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        assert "result" in events(response)[-1]


@pytest.mark.parametrize("era", ERAS)
async def test_a_progress_token_gets_progress_of_the_ask_tool(
    module_client: httpx.AsyncClient, era: str
) -> None:
    params = {
        "name": "ask_agentgate",
        "arguments": {"query": "What is agentgate?"},
        "_meta": {"progressToken": "p1"},
    }
    response = await rpc(module_client, "tools/call", params, era=era)
    assert response.headers["content-type"].startswith("text/event-stream")
    messages = events(response)
    progress = [m["params"] for m in messages if m.get("method") == "notifications/progress"]
    assert progress[0]["progressToken"] == "p1" and progress[0]["progress"] == 0
    assert progress[-1]["progress"] == progress[-1]["total"] and "done" in progress[-1]["message"]
    values = [p["progress"] for p in progress]
    assert values == sorted(set(values))  # strictly increasing
    assert messages[-1]["result"]["structuredContent"]["answer"]


@pytest.mark.parametrize("era", ERAS)
async def test_without_a_progress_token_a_json_client_gets_json(
    module_client: httpx.AsyncClient, era: str
) -> None:
    params = {"name": "ask_agentgate", "arguments": {"query": "What is agentgate?"}}
    response = await rpc(module_client, "tools/call", params, era=era)
    assert response.headers["content-type"].startswith("application/json")


async def test_sessions_are_off_by_default(module_client: httpx.AsyncClient) -> None:
    response = await module_client.delete(URL, headers={"Mcp-Session-Id": "abc"})
    assert response.status_code == 405


@pytest.mark.parametrize(("level", "heard"), [("info", True), ("warning", False), (None, False)])
async def test_modern_requests_get_log_messages_at_the_level_they_ask_for(
    module_client: httpx.AsyncClient, level: str | None, heard: bool
) -> None:
    meta = {"progressToken": "p"} | ({"io.modelcontextprotocol/logLevel": level} if level else {})
    params = {"name": "get_company_info", "arguments": {}, "_meta": meta}
    messages = events(await rpc(module_client, "tools/call", params, era=MODERN))
    logged = [m["params"] for m in messages if m.get("method") == "notifications/message"]
    assert bool(logged) == heard
    if heard:
        assert logged[0]["level"] == "info" and logged[0]["logger"] == "agentgate"
        assert logged[0]["data"].startswith("get_company_info: answered in")


@pytest.mark.parametrize("version", HANDSHAKE)
async def test_stateless_handshake_requests_get_no_log_messages(
    module_client: httpx.AsyncClient, version: str
) -> None:
    params = {"name": "get_company_info", "arguments": {}, "_meta": {"progressToken": "p"}}
    messages = events(await rpc(module_client, "tools/call", params, era=version))
    assert "result" in messages[-1]
    assert not [m for m in messages if m.get("method") == "notifications/message"]  # logging is not declared
