"""``/api/mcp.php`` at the HTTP level: plain clients, protocol errors, discovery, Host checks, versions."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
import pytest_asyncio

from agent_server.foundation.settings import Settings
from http_facade.app import create_app
from tests.conftest import running

pytestmark = pytest.mark.asyncio(loop_scope="module")

URL = "/api/mcp.php"
LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
JSON_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def call(name: str, arguments: object = None, id_: int = 2) -> dict:
    params: dict = {"name": name}
    if arguments is not None:
        params["arguments"] = arguments
    return {"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": params}


async def post(
    client: httpx.AsyncClient, body: object, headers: dict[str, str] | None = None, path: str = URL
):
    """POST raw bytes with exactly the given headers (httpx adds no Accept or Content-Type of its own)."""
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = client.build_request("POST", path, content=content, headers=headers or {})
    for name in ("accept", "content-type"):
        if headers is None or name not in {k.lower() for k in headers}:
            request.headers.pop(name, None)
    response = await client.send(request)
    assert response.headers.get("mcp-version") == "2025-06-18"  # on every answer of the endpoint
    return response


def tool_names(response: httpx.Response) -> set[str]:
    assert response.status_code == 200, response.text
    return {t["name"] for t in response.json()["result"]["tools"]}


# Plain clients


async def test_curl_style_request_without_accept_or_initialize_works(
    module_client: httpx.AsyncClient,
) -> None:
    response = await post(module_client, LIST, {"Content-Type": "application/json"})
    assert response.headers["content-type"].startswith("application/json")
    assert "get_pricing" in tool_names(response)


@pytest.mark.parametrize(
    "accept", ["*/*", "application/json", "application/json, text/event-stream", "application/*"]
)
async def test_any_accept_that_admits_json_gets_json(module_client: httpx.AsyncClient, accept: str) -> None:
    response = await post(module_client, LIST, {"Content-Type": "application/json", "Accept": accept})
    assert response.headers["content-type"].startswith("application/json")
    assert "faq_lookup" in tool_names(response)


@pytest.mark.parametrize("content_type", [None, "application/x-www-form-urlencoded", "text/plain"])
async def test_body_is_read_as_json_whatever_the_content_type(
    module_client: httpx.AsyncClient, content_type: str | None
) -> None:
    headers = {"Content-Type": content_type} if content_type else {}
    assert "get_weather" in tool_names(await post(module_client, LIST, headers))


async def test_client_accepting_only_event_stream_gets_sse(module_client: httpx.AsyncClient) -> None:
    response = await post(
        module_client,
        call("get_company_info", {}),
        {"Content-Type": "application/json", "Accept": "text/event-stream"},
    )
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    data = [line[len("data:") :].strip() for line in response.text.splitlines() if line.startswith("data:")]
    messages = [json.loads(d) for d in data if d]
    assert messages[-1]["id"] == 2
    assert messages[-1]["result"]["structuredContent"]["name"] == "agentgate"


async def test_notification_is_accepted_without_a_body(module_client: httpx.AsyncClient) -> None:
    response = await post(
        module_client, {"jsonrpc": "2.0", "method": "notifications/initialized"}, JSON_HEADERS
    )
    assert response.status_code == 202 and response.content == b""


# Protocol errors


async def test_malformed_json_is_a_parse_error(module_client: httpx.AsyncClient) -> None:
    response = await post(module_client, b'{"jsonrpc": "2.0", "id": 1, "method": ', JSON_HEADERS)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32700


async def test_unknown_method_is_method_not_found(module_client: httpx.AsyncClient) -> None:
    response = await post(module_client, {"jsonrpc": "2.0", "id": 5, "method": "tools/explode"}, JSON_HEADERS)
    assert response.json() == {
        "jsonrpc": "2.0",
        "id": 5,
        "error": {"code": -32601, "message": "Method not found", "data": "tools/explode"},
    }


async def test_tools_call_without_a_name_is_invalid_params(module_client: httpx.AsyncClient) -> None:
    body = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"arguments": {}}}
    response = await post(module_client, body, JSON_HEADERS)
    assert response.json()["id"] == 3 and response.json()["error"]["code"] == -32602


async def test_non_object_arguments_are_invalid_params(module_client: httpx.AsyncClient) -> None:
    response = await post(module_client, call("faq_lookup", ["rate", "limits"]), JSON_HEADERS)
    assert response.json()["error"]["code"] == -32602


async def test_unknown_tool_is_invalid_params_naming_it(module_client: httpx.AsyncClient) -> None:
    response = await post(module_client, call("launch_rockets", {}), JSON_HEADERS)
    error = response.json()["error"]
    assert error["code"] == -32602 and "launch_rockets" in error["message"]


@pytest.mark.parametrize(
    ("name", "arguments", "field"),
    [
        ("get_pricing", {"category": "gadgets"}, "category"),
        ("faq_lookup", {"query": "keys", "limit": 0}, "limit"),
        ("faq_lookup", {}, "query"),
        ("get_weather", {"location": "Paris", "units": "kelvin"}, "units"),
    ],
)
async def test_invalid_arguments_give_an_error_result_naming_the_field(
    module_client: httpx.AsyncClient, name: str, arguments: dict, field: str
) -> None:
    result = (await post(module_client, call(name, arguments), JSON_HEADERS)).json()["result"]
    assert result["isError"] is True and "structuredContent" not in result
    error = json.loads(result["content"][0]["text"])["error"]
    assert error["type"] == "validation_error" and error["param"] == field
    assert f"'{field}'" in error["message"]


async def test_batch_array_is_refused_with_a_json_rpc_error(module_client: httpx.AsyncClient) -> None:
    response = await post(module_client, [LIST, LIST], JSON_HEADERS)
    assert response.status_code == 400 and response.json()["error"]["code"] == -32600


# Discovery and methods


async def test_get_returns_the_manifest_not_a_stream(module_client: httpx.AsyncClient) -> None:
    response = await module_client.get(URL, headers={"Accept": "text/event-stream"})
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json; charset=utf-8"
    assert response.headers["mcp-version"] == "2025-06-18"
    manifest = response.json()
    assert {t["name"] for t in manifest["tools"]} >= {"ask_agentgate", "get_pricing"}
    assert len(manifest["resources"]) == 8


async def test_head_returns_headers_only(module_client: httpx.AsyncClient) -> None:
    response = await module_client.head(URL)
    assert response.status_code == 200 and response.content == b""
    assert int(response.headers["content-length"]) > 0


@pytest.mark.parametrize("method", ["DELETE", "PUT", "PATCH"])
async def test_other_methods_are_405_json(module_client: httpx.AsyncClient, method: str) -> None:
    response = await module_client.request(method, URL)
    assert response.status_code == 405
    assert response.headers["content-type"].startswith("application/json")
    assert "POST" in response.headers["allow"]
    assert "error" in response.json()


async def test_trailing_slash_is_the_same_endpoint_not_a_redirect(module_client: httpx.AsyncClient) -> None:
    response = await post(module_client, LIST, JSON_HEADERS, path=f"{URL}/")
    assert response.status_code == 200 and "location" not in response.headers
    assert tool_names(response) == tool_names(await post(module_client, LIST, JSON_HEADERS))
    manifest = await module_client.get(f"{URL}/")
    assert manifest.status_code == 200 and manifest.json() == (await module_client.get(URL)).json()


# Protocol versions


@pytest.mark.parametrize(
    ("asked", "answered"),
    [("2025-06-18", "2025-06-18"), ("2025-11-25", "2025-11-25"), ("2099-01-01", "2025-11-25")],
)
async def test_initialize_negotiates_the_version(
    module_client: httpx.AsyncClient, asked: str, answered: str
) -> None:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": asked,
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"},
        },
    }
    result = (await post(module_client, body, JSON_HEADERS)).json()["result"]
    assert result["protocolVersion"] == answered
    assert result["serverInfo"]["name"] == "agentgate" and "tools" in result["capabilities"]


async def test_modern_single_exchange_request_works(module_client: httpx.AsyncClient) -> None:
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    body = {
        "jsonrpc": "2.0",
        "id": 9,
        "method": "tools/call",
        "params": {"name": "get_company_info", "arguments": {}, "_meta": meta},
    }
    headers = {
        **JSON_HEADERS,
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": "get_company_info",
    }
    response = await post(module_client, body, headers)
    assert response.status_code == 200, response.text
    assert response.json()["result"]["structuredContent"]["name"] == "agentgate"


async def test_modern_header_without_envelope_is_a_400_json_rpc_error(
    module_client: httpx.AsyncClient,
) -> None:
    response = await post(module_client, LIST, {**JSON_HEADERS, "MCP-Protocol-Version": "2026-07-28"})
    assert response.status_code == 400 and response.json()["error"]["code"] == -32602


# Host and Origin (DNS-rebinding protection)


@pytest.mark.parametrize(
    ("header", "value", "status"),
    [
        ("Host", "evil.example.com", 421),
        ("Host", "localhost", 421),
        ("Origin", "http://evil.example.com", 403),
    ],
)
async def test_foreign_host_or_origin_is_refused_as_json(
    module_client: httpx.AsyncClient, header: str, value: str, status: int
) -> None:
    response = await post(module_client, LIST, {**JSON_HEADERS, header: value})
    assert response.status_code == status
    body = response.json()
    assert body["error"]["code"] == -32600 and value.split("//")[-1] in body["error"]["message"]


async def test_loopback_origin_is_allowed(module_client: httpx.AsyncClient) -> None:
    assert tool_names(await post(module_client, LIST, {**JSON_HEADERS, "Origin": "http://localhost:3000"}))


@pytest_asyncio.fixture(loop_scope="module")
async def public_client(tmp_path: Path):
    """The app configured for a public host name, as it runs behind a proxy."""
    settings = Settings(data_dir=tmp_path, public_base_url="https://agentgate.example.com")
    async with (
        running(create_app(settings)) as app,
        httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="https://agentgate.example.com") as c,
    ):
        yield c


@pytest.mark.parametrize(
    "host", ["agentgate.example.com", "AgentGate.Example.COM", "agentgate.example.com:443", "127.0.0.1:8000"]
)
async def test_the_public_host_is_never_refused(public_client: httpx.AsyncClient, host: str) -> None:
    headers = {**JSON_HEADERS, "Host": host, "Origin": "https://agentgate.example.com"}
    assert "ask_agentgate" in tool_names(await post(public_client, LIST, headers))


async def test_public_deployment_still_refuses_other_hosts(public_client: httpx.AsyncClient) -> None:
    response = await post(public_client, LIST, {**JSON_HEADERS, "Host": "attacker.example.net"})
    assert response.status_code == 421
    response = await post(
        public_client, LIST, {**JSON_HEADERS, "Origin": "https://agentgate.example.com.evil.net"}
    )
    assert response.status_code == 403
