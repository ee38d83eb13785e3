"""Bounded inputs: paging, strict types, max_tokens per model; and a true ``Allow`` on every 405."""

from __future__ import annotations

import re

import pytest
from fastapi.routing import iter_route_contexts

from agent_server.foundation.settings_llm import UpstreamConfig
from agent_server.gateway.model_table import ModelTable
from agent_server.gateway.output_limits import UNKNOWN_MODEL_CEILING, output_ceiling
from tests.gateway.conftest import MODEL, Harness, chat_body, key_headers

RELAYED = {
    "/v1/chat/completions": chat_body(),
    "/v1/completions": {"model": MODEL, "prompt": "Say hello"},
    "/v1/responses": {"model": MODEL, "input": "Say hello"},
}
OUTPUT_FIELD = {
    "/v1/chat/completions": "max_tokens",
    "/v1/completions": "max_tokens",
    "/v1/responses": "max_output_tokens",
}
MOCK_SMALL_WINDOW = 8192  # models.yaml


async def test_a_huge_offset_is_a_400_not_a_database_error(harness: Harness) -> None:
    platform = await harness.tenant("enterprise", permissions=("platform:admin", "tenant:admin"))
    url = "/admin/platform/tenants"
    for offset in ("9223372036854775808", "1000001", "-1"):
        response = await harness.client.get(url, params={"offset": offset}, headers=platform.headers)
        assert response.status_code == 400, offset
        assert response.json()["error"]["param"] == "offset"
    last_page = await harness.client.get(url, params={"offset": 1_000_000}, headers=platform.headers)
    assert last_page.status_code == 200 and last_page.json()["data"] == []


@pytest.mark.parametrize("path", RELAYED)
@pytest.mark.parametrize(("field", "value"), [("stream", "yes"), ("stream", 1), ("stream", "true")])
async def test_stream_must_be_a_boolean(harness: Harness, path: str, field: str, value: object) -> None:
    _, key = await harness.key(await harness.tenant("professional"))
    response = await harness.client.post(path, json={**RELAYED[path], field: value}, headers=key_headers(key))
    assert response.status_code == 400
    assert (
        response.json()["error"]["param"] == field
        and response.json()["error"]["type"] == "invalid_request_error"
    )


@pytest.mark.parametrize("path", RELAYED)
async def test_output_tokens_are_bounded_by_the_models_window(harness: Harness, path: str) -> None:
    _, key = await harness.key(await harness.tenant("professional"))
    field = OUTPUT_FIELD[path]
    fits = await harness.client.post(
        path, json={**RELAYED[path], field: MOCK_SMALL_WINDOW}, headers=key_headers(key)
    )
    assert fits.status_code == 200, fits.text
    for asked in (MOCK_SMALL_WINDOW + 1, 10**18, 2**64):
        refused = await harness.client.post(
            path, json={**RELAYED[path], field: asked}, headers=key_headers(key)
        )
        assert refused.status_code == 400, (path, asked)
        error = refused.json()["error"]
        assert error["param"] == field and error["code"] == "max_tokens_too_large", error
        assert "X-RateLimit-Limit" in refused.headers  # refused after admission, like every body error


async def test_max_completion_tokens_is_bounded_too(harness: Harness) -> None:
    _, key = await harness.key(await harness.tenant("professional"))
    refused = await harness.client.post(
        "/v1/chat/completions", json=chat_body(max_completion_tokens=10**9), headers=key_headers(key)
    )
    assert refused.status_code == 400 and refused.json()["error"]["param"] == "max_completion_tokens"


def test_a_model_without_a_known_window_gets_the_documented_ceiling() -> None:
    upstream = UpstreamConfig(
        name="u",
        base_url="http://127.0.0.1:9/v1",
        models={"plain": "plain", "roomy": {"context_window": 2_000_000}},
    )
    table = ModelTable([], [upstream])
    assert output_ceiling(table, "plain") == UNKNOWN_MODEL_CEILING == 1_048_576
    assert output_ceiling(table, "roomy") == 2_000_000
    assert output_ceiling(table, "only-in-a-routing-table") == UNKNOWN_MODEL_CEILING


def _methods_by_path(harness: Harness) -> dict[str, set[str]]:
    served: dict[str, set[str]] = {}
    for route in iter_route_contexts(harness.app.routes):
        if route.path_format and route.methods:
            served.setdefault(route.path_format, set()).update(route.methods)
    return served


async def test_every_405_lists_every_method_of_the_resource(harness: Harness) -> None:
    admin = await harness.tenant()
    checked = 0
    for path, methods in _methods_by_path(harness).items():
        url = re.sub(r"\{[^}]+\}", "x", path)
        refused_method = next(m for m in ("PUT", "PATCH", "DELETE", "POST", "GET") if m not in methods)
        response = await harness.client.request(refused_method, url, headers=admin.headers)
        if response.status_code != 405:
            continue  # another route of the same URL serves that method (e.g. a path parameter)
        allowed = {m.strip() for m in response.headers["allow"].split(",")}
        assert methods <= allowed and refused_method not in allowed, (url, allowed)
        checked += 1
    assert checked > 100
    two = await harness.client.put("/admin/api-keys/key_x", headers=admin.headers)
    assert two.headers["allow"] == "GET, PATCH, DELETE"  # three routes share this path
    assert two.json()["error"]["code"] == "method_not_allowed"


async def test_the_messages_api_bounds_max_tokens_in_its_own_error_shape(harness: Harness) -> None:
    _, key = await harness.key(await harness.tenant("professional"))
    body = {"model": MODEL, "messages": [{"role": "user", "content": "Say hello"}]}
    fits = await harness.client.post(
        "/v1/messages", json={**body, "max_tokens": MOCK_SMALL_WINDOW}, headers=key_headers(key)
    )
    assert fits.status_code == 200, fits.text
    refused = await harness.client.post(
        "/v1/messages", json={**body, "max_tokens": MOCK_SMALL_WINDOW + 1}, headers=key_headers(key)
    )
    assert refused.status_code == 400, refused.text
    error = refused.json()
    assert error["type"] == "error" and error["error"]["type"] == "invalid_request_error", error
    assert "max_tokens" in error["error"]["message"]
