"""What the MCP fast path leaves to the SDK, and the Host/Origin checks both paths share.

Every request here is sent to an app with the fast path off and one with it on: the answers must be
identical, and the fast app's gate must have handed the request over (``deferred``) rather than
answered it, or, for refused hosts and SSE-only clients, never have seen it.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from tests.mcp.fast_path_support import ENVELOPE, JSON_ACCEPT, MODERN, Answer, Side, mcp_request, side

pytestmark = pytest.mark.asyncio(loop_scope="module")

LEGACY = "2025-06-18"
CALL = {"name": "get_company_info", "arguments": {}}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def sdk(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Side]:
    async with side(tmp_path_factory.mktemp("sdk"), fast=False) as s:
        yield s


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def fast(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Side]:
    async with side(tmp_path_factory.mktemp("fast"), fast=True) as s:
        yield s


async def compare(sdk: Side, fast: Side, body: Any, headers: Any, *, offered: bool = True) -> Answer:
    """Both apps answer alike; the fast app's gate deferred the request (or never saw it)."""
    gate = fast.gate
    assert gate is not None
    served, deferred = gate.served, gate.deferred
    expected = await sdk.post(body, headers)
    answered = await fast.post(body, headers)
    assert answered == expected
    assert gate.served == served, "the fast path answered a request that belongs to the SDK"
    assert gate.deferred == deferred + (1 if offered else 0)
    return answered


def raw(method: str, params: Any = None, **envelope: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": method, **envelope}
    if params is not None:
        body["params"] = params
    return body


def legacy(**extra: str) -> dict[str, str]:
    return {**JSON_ACCEPT, "MCP-Protocol-Version": LEGACY, **extra}


INITIALIZE = {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}


@pytest.mark.parametrize(
    ("body", "status"),
    [
        (raw("initialize", INITIALIZE), 200),
        (raw("prompts/list"), 200),
        (raw("resources/list"), 200),
        (raw("resources/templates/list"), 200),
        (raw("tools/explode"), 200),
        ({"jsonrpc": "2.0", "method": "notifications/initialized"}, 202),  # a notification
        ([raw("tools/list"), raw("ping")], 400),  # a batch
        (raw("tools/list", {"cursor": "abc"}), None),  # pagination is the SDK's to judge
        (raw("tools/call", {**CALL, "_meta": {"progressToken": 7}}), 200),
        (raw("tools/call", {**CALL, "requestState": "x"}), None),
        (raw("tools/call", {"name": "get_company_info", "arguments": ["x"]}), None),
        (raw("tools/call", {"name": 42}), None),
        (raw("tools/call", {"arguments": {}}), None),
        (raw("resources/read", {"uri": 7}), None),
        ({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": None}, None),
        (raw("tools/list", ["x"]), None),
        (raw("tools/list", id=None), None),
        (raw("tools/list", id={"a": 1}), None),
        (raw("tools/list", id=1.5), None),
        (raw("tools/list", id=True), None),
        (raw("tools/list", jsonrpc="1.0"), None),
        (raw("tools/list", trace="x"), None),  # a member JSON-RPC does not define
        (b'{"jsonrpc": "2.0", "id": 1, "method": ', 400),
        (b"", 400),
    ],
)
async def test_handshake_requests_the_fast_path_leaves_to_the_sdk(
    sdk: Side, fast: Side, body: Any, status: int | None
) -> None:
    answer = await compare(sdk, fast, body, legacy())
    if status is not None:
        assert answer.status == status


@pytest.mark.parametrize(
    "extra",
    [
        {"Mcp-Session-Id": "0123456789abcdef"},
        {"Last-Event-ID": "1"},
        {"Mcp-Param-Category": "plans"},
        {"MCP-Protocol-Version": "2099-01-01"},  # unknown: the SDK's classifier answers 400
        {"MCP-Protocol-Version": "garbage"},
    ],
)
async def test_unusual_headers_go_to_the_sdk(sdk: Side, fast: Side, extra: dict[str, str]) -> None:
    await compare(sdk, fast, raw("tools/call", CALL), legacy(**extra))


def modern(
    method: str, params: dict[str, Any], meta: dict[str, Any] | None = None, **headers: str
) -> tuple[dict[str, Any], dict[str, str]]:
    """A 2026-07-28 request, optionally with another ``_meta`` and other headers."""
    body, sent = mcp_request(MODERN, method, params)
    if meta is not None:
        body["params"]["_meta"] = meta
    return body, {**sent, **headers}


VERSION_KEY = "io.modelcontextprotocol/protocolVersion"


async def test_modern_requests_the_sdk_must_judge(sdk: Side, fast: Side) -> None:
    cases: list[tuple[Any, Any]] = [
        modern("ping", {}),  # 2026-07-28 has no ping: -32601 with 404
        modern("tools/call", CALL, **{"Mcp-Name": "get_pricing"}),  # header and body disagree
        modern("tools/call", CALL, **{"Mcp-Method": "tools/list"}),
        (raw("tools/call", CALL), {**JSON_ACCEPT, "MCP-Protocol-Version": MODERN}),  # no envelope
        modern("tools/list", {}, {**ENVELOPE, VERSION_KEY: "2099-01-01"}),
        modern("tools/list", {}, {**ENVELOPE, "progressToken": 1}),
        modern("tools/list", {}, {**ENVELOPE, "io.modelcontextprotocol/clientCapabilities": "none"}),
        modern("server/discover", {}),
        ({"jsonrpc": "2.0", "method": "notifications/initialized"}, modern("tools/list", {})[1]),
    ]
    for body, headers in cases:
        await compare(sdk, fast, body, headers)
    body, headers = modern("tools/call", CALL)
    repeated = [*headers.items(), ("Mcp-Method", "tools/call")]  # a routing header sent twice
    assert (await compare(sdk, fast, body, repeated)).status == 400


async def test_a_client_accepting_only_sse_never_reaches_the_fast_path(sdk: Side, fast: Side) -> None:
    headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
    gate = fast.gate
    assert gate is not None
    served, deferred = gate.served, gate.deferred
    for side_ in (sdk, fast):
        response = await side_.client.post("/api/mcp.php", json=raw("tools/call", CALL), headers=headers)
        assert response.headers["content-type"].startswith("text/event-stream")
        data = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
        assert json.loads(data[-1])["result"]["structuredContent"]["name"] == "agentgate"
    assert (gate.served, gate.deferred) == (served, deferred)


# Host and Origin: checked before either path, identically


@pytest.mark.parametrize(
    ("header", "value", "status"),
    [
        ("Host", "evil.example.com", 421),
        ("Host", "localhost", 421),
        ("Origin", "http://evil.example.com", 403),
    ],
)
@pytest.mark.parametrize("era", [None, LEGACY, MODERN])
async def test_foreign_hosts_and_origins_are_refused_before_either_path(
    sdk: Side, fast: Side, era: str | None, header: str, value: str, status: int
) -> None:
    body, headers = mcp_request(era, "tools/call", CALL)
    answer = await compare(sdk, fast, body, {**headers, header: value}, offered=False)
    assert answer.status == status and answer.json()["error"]["code"] == -32600


@pytest.mark.parametrize("era", [None, LEGACY, MODERN])
async def test_an_allowed_origin_takes_the_fast_path(sdk: Side, fast: Side, era: str | None) -> None:
    body, headers = mcp_request(era, "tools/call", CALL)
    headers = {**headers, "Origin": "http://localhost:3000"}
    gate = fast.gate
    assert gate is not None
    served = gate.served
    expected, answered = await sdk.post(body, headers), await fast.post(body, headers)
    assert answered == expected and answered.status == 200
    assert gate.served == served + 1
    assert ("access-control-allow-origin", "http://localhost:3000") in answered.headers
