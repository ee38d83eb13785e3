"""JSON-RPC and MCP errors of ``/api/mcp.php`` in every protocol era, at the HTTP level.

Each case runs under every handshake version (``MCP-Protocol-Version`` header) and under 2026-07-28
(the per-request envelope and routing headers).
"""

from __future__ import annotations

import json
import logging

import httpx
import pytest

from tests.mcp.support import ERAS, MODERN, URL, request, rpc

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def post_raw(client: httpx.AsyncClient, body: object, era: str) -> httpx.Response:
    _, headers = request("tools/list", era=era)
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return await client.post(URL, content=content, headers=headers)


def error_of(response: httpx.Response) -> dict:
    return response.json()["error"]


@pytest.mark.parametrize("era", ERAS)
async def test_unknown_prompt_is_invalid_params_without_a_traceback(
    module_client: httpx.AsyncClient, era: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    response = await rpc(module_client, "prompts/get", {"name": "no_such_prompt"}, era=era)
    assert response.status_code == (400 if era == MODERN else 200)
    error = error_of(response)
    assert error["code"] == -32602
    assert "no_such_prompt" in error["message"] and "plan_consulting_engagement" in error["message"]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info], caplog.text


@pytest.mark.parametrize("era", ERAS)
async def test_missing_prompt_argument_is_invalid_params_naming_it(
    module_client: httpx.AsyncClient, era: str
) -> None:
    response = await rpc(module_client, "prompts/get", {"name": "plan_consulting_engagement"}, era=era)
    error = error_of(response)
    assert error["code"] == -32602 and "'goal'" in error["message"] and error["data"] == {"param": "goal"}


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("bad_id", [{"a": 1}, None, [1], 1.5, True])
async def test_an_id_that_is_no_string_or_integer_is_invalid_request(
    module_client: httpx.AsyncClient, era: str, bad_id: object
) -> None:
    body, _ = request("tools/list", era=era)
    response = await post_raw(module_client, {**body, "id": bad_id}, era)
    assert response.status_code == 400 and response.content, "not a 202 with an empty body"
    assert response.json() == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32600, "message": "Invalid Request: id must be a string or an integer."},
    }


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize(
    ("change", "code"),
    [
        ({"jsonrpc": "1.0"}, -32600),
        ({"method": 7}, -32600),
        ({"method": {}}, -32600),
        ({"method": ["tools/list"]}, -32600),
        ({"method": ""}, -32600),
        ({"params": "all"}, -32600),
        ({"params": None}, -32600),  # present but no object: the SDK answered -32602 with a 200
        ({"params": ["positional"]}, -32602),
    ],
)
async def test_invalid_requests_are_refused_with_their_id(
    module_client: httpx.AsyncClient, era: str, change: dict, code: int
) -> None:
    body, _ = request("tools/list", era=era, id_=42)
    response = await post_raw(module_client, {**body, **change}, era)
    assert response.status_code == 400
    assert response.json()["id"] == 42 and error_of(response)["code"] == code


@pytest.mark.parametrize("era", ERAS)
async def test_a_request_without_method_is_invalid_request(
    module_client: httpx.AsyncClient, era: str
) -> None:
    response = await post_raw(module_client, {"jsonrpc": "2.0", "id": 3}, era)
    assert response.status_code == 400 and error_of(response)["code"] == -32600


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("batch", [[], "two requests", [1, 2]])
async def test_batches_are_invalid_requests(
    module_client: httpx.AsyncClient, era: str, batch: object
) -> None:
    if batch == "two requests":
        batch = [request("tools/list", era=era, id_=n)[0] for n in (1, 2)]
    response = await post_raw(module_client, batch, era)
    assert response.status_code == 400
    assert response.json()["id"] is None and error_of(response)["code"] == -32600
    assert "one JSON-RPC message per POST" in error_of(response)["message"]


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("body", [b"{", b"", b"\xff\xfe"])
async def test_a_body_that_is_no_json_is_a_parse_error(
    module_client: httpx.AsyncClient, era: str, body: bytes
) -> None:
    response = await post_raw(module_client, body, era)
    assert response.status_code == 400 and error_of(response)["code"] == -32700


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize(
    "method", ["tools/list", "resources/list", "resources/templates/list", "prompts/list"]
)
async def test_a_bogus_cursor_is_invalid_params(
    module_client: httpx.AsyncClient, era: str, method: str
) -> None:
    response = await rpc(module_client, method, {"cursor": "bm90LWEtY3Vyc29y"}, era=era)
    error = error_of(response)
    assert error["code"] == -32602 and "cursor" in error["message"]


@pytest.mark.parametrize("era", ERAS)
async def test_unknown_resource_code_follows_the_era(module_client: httpx.AsyncClient, era: str) -> None:
    response = await rpc(module_client, "resources/read", {"uri": "kb://nothing"}, era=era)
    error = error_of(response)
    # SEP-2164 made it -32602 at 2026-07-28; the handshake eras answer -32002 (resource not found)
    assert error["code"] == (-32602 if era == MODERN else -32002)
    assert error["data"] == {"uri": "kb://nothing"}


@pytest.mark.parametrize("era", ERAS)
async def test_unknown_template_instance_is_not_found(module_client: httpx.AsyncClient, era: str) -> None:
    response = await rpc(module_client, "resources/read", {"uri": "faq://entry/no-such-entry"}, era=era)
    assert "no FAQ entry" in error_of(response)["message"]


@pytest.mark.parametrize("era", ERAS)
async def test_a_response_from_the_client_is_accepted_where_the_server_can_ask(
    module_client: httpx.AsyncClient, era: str
) -> None:
    response = await post_raw(module_client, {"jsonrpc": "2.0", "id": 9, "result": {}}, era)
    if era == MODERN:  # 2026-07-28 servers send no requests, so a posted response answers nothing
        assert response.status_code == 400 and error_of(response)["code"] == -32600
    else:
        assert response.status_code == 202 and response.content == b""
