"""Bad input on every foundation route: always the spec 7.2 envelope, never a 500, a traceback or HTML.

Routes: POST /api/tools/call, GET /api/tools.php, GET /api/capabilities.php, GET|POST /api/mcp.php,
and any other path under /api/. The request size limit is lowered to 4 KiB for these tests.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from agent_server.foundation.settings import Settings
from tests.conftest import BASE_URL, LiveServer
from tests.test_surfaces import TOOL_NAMES

pytestmark = pytest.mark.asyncio(loop_scope="module")

LIMIT = 4096
JSON_UTF8 = "application/json; charset=utf-8"


def small_limit(data_dir: Path) -> Settings:
    return Settings(
        data_dir=data_dir,
        public_base_url=BASE_URL,
        redis_url=None,
        database_url=None,
        max_request_bytes=LIMIT,
    )


@pytest.fixture(scope="module")
def module_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """The app of this module's ``module_client`` has a small body limit."""
    return small_limit(tmp_path_factory.mktemp("app"))


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    """The same for ``live_server`` (which takes the shared ``settings`` fixture)."""
    return small_limit(tmp_path)


def envelope(response: httpx.Response, status: int, type_: str, code: str | None = None) -> dict:
    """Assert the public-site envelope (spec 7.2) and return its error object."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == JSON_UTF8
    assert "Traceback" not in response.text and "<html" not in response.text.lower()
    body = response.json()
    assert set(body) == {"error"}
    error = body["error"]
    assert error["type"] == type_ and error["message"]
    assert error["code"] == error["code"].upper() and error["documentation_url"].startswith(BASE_URL)
    if code is not None:
        assert error["code"] == code
    return error


async def raw_post(
    client: httpx.AsyncClient, path: str, content: bytes, content_type: str | None
) -> httpx.Response:
    request = client.build_request("POST", path, content=content)
    request.headers.pop("content-type", None)
    if content_type is not None:
        request.headers["content-type"] = content_type
    return await client.send(request)


# POST /api/tools/call: the body


@pytest.mark.parametrize(
    "content_type", ["application/json", None, "text/plain", "application/x-www-form-urlencoded"]
)
@pytest.mark.parametrize("body", [b"{", b'{"name": "faq_lookup",}', b"not json at all", b"\xff\xfe\x00"])
async def test_malformed_json_says_so_whatever_the_content_type(
    module_client: httpx.AsyncClient, body: bytes, content_type: str | None
) -> None:
    error = envelope(
        await raw_post(module_client, "/api/tools/call", body, content_type),
        400,
        "validation_error",
        "INVALID_JSON",
    )
    assert error["message"] == "The request body is not valid JSON." and error["param"] == "body"


@pytest.mark.parametrize("content_type", [None, "text/plain", "application/x-www-form-urlencoded"])
async def test_valid_json_without_a_json_content_type_is_explained(
    module_client: httpx.AsyncClient, content_type: str | None
) -> None:
    body = json.dumps({"name": "get_company_info"}).encode()
    error = envelope(
        await raw_post(module_client, "/api/tools/call", body, content_type), 400, "validation_error"
    )
    assert error["code"] == "INVALID_CONTENT_TYPE" and "application/json" in error["message"]


async def test_empty_body_is_required(module_client: httpx.AsyncClient) -> None:
    error = envelope(
        await raw_post(module_client, "/api/tools/call", b"", "application/json"), 400, "validation_error"
    )
    assert error["param"] == "body" and "required" in error["message"]


@pytest.mark.parametrize(
    ("body", "kind"),
    [([], "an array"), ("get_pricing", "a string"), (42, "a number"), (True, "a boolean")],
)
async def test_body_that_is_not_an_object(module_client: httpx.AsyncClient, body: object, kind: str) -> None:
    error = envelope(await module_client.post("/api/tools/call", json=body), 400, "validation_error")
    assert error["message"] == f"The request body must be a JSON object, not {kind}."


async def test_json_null_body_is_not_an_object(module_client: httpx.AsyncClient) -> None:
    response = await raw_post(module_client, "/api/tools/call", b"null", "application/json")
    assert (
        envelope(response, 400, "validation_error")["message"]
        == "The request body must be a JSON object, not null."
    )


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({}, "name"),
        ({"arguments": {}}, "name"),
        ({"name": 123}, "name"),
        ({"name": ""}, "name"),
        ({"name": "x" * 129}, "name"),
        ({"name": ["get_pricing"]}, "name"),
        ({"name": "get_pricing", "argumnets": {}}, "argumnets"),
        ({"name": "faq_lookup", "arguments": []}, "arguments"),
        ({"name": "faq_lookup", "arguments": "query=keys"}, "arguments"),
        ({"name": "faq_lookup", "arguments": 7}, "arguments"),
        ({"name": "get_pricing", "arguments": {"category": "gadgets"}}, "category"),
        ({"name": "get_pricing", "arguments": {"category": 3}}, "category"),
        ({"name": "faq_lookup", "arguments": {"query": "keys", "limit": "many"}}, "limit"),
        ({"name": "faq_lookup", "arguments": {"query": "k", "extra": 1}}, "extra"),
        ({"name": "ask_agentgate", "arguments": {"query": "x" * 2001}}, "query"),
    ],
)
async def test_wrong_or_missing_fields_name_the_field(
    module_client: httpx.AsyncClient, body: dict, param: str
) -> None:
    error = envelope(await module_client.post("/api/tools/call", json=body), 400, "validation_error")
    assert error["param"] == param and param in error["message"]


@pytest.mark.parametrize("name", ["nope", "GET_PRICING", "get_pricing ", "../etc/passwd", "ask_acme"])
async def test_unknown_tool_names(module_client: httpx.AsyncClient, name: str) -> None:
    error = envelope(
        await module_client.post("/api/tools/call", json={"name": name}), 404, "not_found", "NOT_FOUND"
    )
    assert error["param"] == "name" and "get_pricing" in error["message"]


async def test_null_arguments_mean_none(module_client: httpx.AsyncClient) -> None:
    response = await module_client.post(
        "/api/tools/call", json={"name": "get_company_info", "arguments": None}
    )
    assert response.status_code in (200, 400)  # either accepted as {} or refused clearly, never a crash
    if response.status_code == 400:
        envelope(response, 400, "validation_error")


# Size limit, with Content-Length and chunked


def oversized() -> bytes:
    return json.dumps({"name": "faq_lookup", "arguments": {"query": "k" * (LIMIT + 100)}}).encode()


async def chunks(data: bytes) -> AsyncIterator[bytes]:
    for start in range(0, len(data), 1000):
        yield data[start : start + 1000]


@pytest.mark.parametrize("path", ["/api/tools/call", "/api/mcp.php"])
async def test_body_over_the_limit_with_content_length(module_client: httpx.AsyncClient, path: str) -> None:
    response = await module_client.post(
        path, content=oversized(), headers={"Content-Type": "application/json"}
    )
    error = envelope(response, 413, "validation_error", "PAYLOAD_TOO_LARGE")
    assert str(LIMIT) in error["message"]
    assert ("mcp-version" in response.headers) == (path == "/api/mcp.php")


@pytest.mark.parametrize("path", ["/api/tools/call", "/api/mcp.php"])
async def test_body_over_the_limit_chunked(module_client: httpx.AsyncClient, path: str) -> None:
    response = await module_client.post(
        path, content=chunks(oversized()), headers={"Content-Type": "application/json"}
    )
    assert "content-length" not in response.request.headers
    envelope(response, 413, "validation_error", "PAYLOAD_TOO_LARGE")


@pytest.mark.parametrize("path", ["/api/tools/call", "/api/mcp.php"])
async def test_body_over_the_limit_chunked_over_real_http(live_server: LiveServer, path: str) -> None:
    async with httpx.AsyncClient(base_url=live_server.url) as http:
        response = await http.post(path, content=chunks(oversized()))
        assert response.request.headers.get("transfer-encoding") == "chunked"
        assert response.status_code == 413 and response.headers["content-type"] == JSON_UTF8
        assert response.json()["error"]["code"] == "PAYLOAD_TOO_LARGE"
        # the connection is still usable afterwards
        assert (await http.get("/api/capabilities.php")).status_code == 200


async def test_body_just_under_the_limit_is_fine(module_client: httpx.AsyncClient) -> None:
    body = json.dumps({"name": "faq_lookup", "arguments": {"query": "keys"}})
    body = body.replace('"keys"', '"keys' + " " * (LIMIT - len(body) - 10) + '"')
    assert len(body) < LIMIT
    response = await module_client.post(
        "/api/tools/call", content=body.encode(), headers={"Content-Type": "application/json"}
    )
    assert (
        response.status_code == 400 and response.json()["error"]["param"] == "query"
    )  # over 500 chars, not 413


# Dialects, unknown paths, wrong methods


async def test_unknown_dialect(module_client: httpx.AsyncClient) -> None:
    error = envelope(
        await module_client.get("/api/tools.php", params={"dialect": "cobol"}), 400, "validation_error"
    )
    assert error["param"] == "dialect" and "openai, anthropic, gemini" in error["message"]


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/api/nope"),
        ("GET", "/api/"),
        ("POST", "/api/tools/nope"),
        ("GET", "/api/tools/call/extra"),
        ("GET", "/api/mcp.phpx"),
        ("DELETE", "/api/v9/anything.php"),
        ("GET", "/api/%E2%98%83"),
    ],
)
async def test_unknown_paths_under_api_are_json_404(
    module_client: httpx.AsyncClient, method: str, path: str
) -> None:
    response = await module_client.request(method, path)
    error = envelope(response, 404, "not_found", "ENDPOINT_NOT_FOUND")
    assert error["documentation_url"].endswith("#endpoint_not_found")


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("GET", "/api/tools/call", "POST"),
        ("PUT", "/api/tools/call", "POST"),
        ("POST", "/api/tools.php", "GET"),
        ("DELETE", "/api/capabilities.php", "GET"),
        ("PATCH", "/api/capabilities.php", "GET"),
    ],
)
async def test_wrong_methods_are_json_405(
    module_client: httpx.AsyncClient, method: str, path: str, allowed: str
) -> None:
    response = await module_client.request(method, path)
    error = envelope(response, 405, "validation_error", "METHOD_NOT_ALLOWED")
    assert allowed in response.headers["allow"] and allowed in error["message"]


async def test_api_version_header_is_on_errors_too(module_client: httpx.AsyncClient) -> None:
    for response in (
        await module_client.get("/api/nope"),
        await module_client.post("/api/tools/call", json={}),
        await module_client.post(
            "/api/tools/call", content=oversized(), headers={"Content-Type": "application/json"}
        ),
    ):
        assert response.headers["api-version"] == "2026-05-18"


# Properties: no JSON body makes either endpoint answer 5xx


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
tool_call_bodies = st.one_of(
    json_values,
    st.fixed_dictionaries(
        {"name": st.sampled_from(TOOL_NAMES) | st.text(max_size=20), "arguments": json_values}
    ),
    st.fixed_dictionaries(
        {"name": st.sampled_from(TOOL_NAMES)},
        optional={
            "arguments": st.dictionaries(
                st.sampled_from(["query", "category", "limit", "location", "capability"]), json_values
            )
        },
    ),
)
PROPERTY = hypothesis_settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@PROPERTY
@given(body=tool_call_bodies)
async def test_tools_call_never_answers_5xx(module_client: httpx.AsyncClient, body: object) -> None:
    response = await module_client.post("/api/tools/call", json=body)
    assert response.status_code < 500, response.text
    if response.status_code == 200:
        assert response.json()["name"] == body["name"]  # type: ignore[index]
    else:
        envelope(response, response.status_code, response.json()["error"]["type"])


@PROPERTY
@given(body=st.binary(max_size=64) | json_values.map(lambda v: json.dumps(v).encode()))
async def test_tools_call_never_answers_5xx_for_any_bytes(
    module_client: httpx.AsyncClient, body: bytes
) -> None:
    response = await module_client.post(
        "/api/tools/call", content=body, headers={"Content-Type": "application/json"}
    )
    assert response.status_code < 500, response.text
    assert response.headers["content-type"].startswith("application/json")


mcp_bodies = st.one_of(
    json_values,
    st.fixed_dictionaries(
        {
            "jsonrpc": st.just("2.0"),
            "id": st.integers(0, 9) | st.text(max_size=4),
            "method": st.sampled_from(["tools/call", "tools/list", "resources/read", "initialize", "ping"])
            | st.text(max_size=12),
        },
        optional={
            "params": json_values
            | st.fixed_dictionaries({"name": st.sampled_from(TOOL_NAMES), "arguments": json_values})
        },
    ),
)


@PROPERTY
@given(body=mcp_bodies)
async def test_mcp_never_answers_5xx(module_client: httpx.AsyncClient, body: object) -> None:
    response = await module_client.post("/api/mcp.php", json=body, headers={"Accept": "application/json"})
    assert response.status_code < 500, response.text
    assert response.headers["mcp-version"] == "2025-06-18"
    if response.content:
        assert isinstance(response.json(), dict)
