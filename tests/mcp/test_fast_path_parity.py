"""The MCP fast path answers byte for byte what the SDK answers: every tool, every resource, the
listing, ping and the error cases, in every protocol era, compared with the fast path off and on.

Each case asserts that the fast app really took its fast path (its gate counted the request), so a
fast path that quietly handed everything to the SDK would fail here too.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from agent_server.capabilities.context import ToolContext
from tests.mcp.fast_path_support import ENVELOPE, ERAS, MODERN, URL, Answer, Side, mcp_request, side
from tests.test_surfaces import CALLABLE, EXAMPLES, RESOURCE_URIS, TOOL_NAMES

pytestmark = pytest.mark.asyncio(loop_scope="module")

TOOL_ERRORS = [
    ("launch_rockets", {}),  # unknown tool: a protocol error naming the known ones
    ("get_pricing", {"category": "gadgets"}),  # invalid argument: an isError result naming the field
    ("faq_lookup", {"query": "keys", "limit": 0}),
    ("faq_lookup", {}),  # a required argument missing
    ("get_weather", {"location": "Paris", "units": "kelvin"}),
    ("list_models", {"unexpected": True}),  # an argument the tool does not take
]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def sdk(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Side]:
    async with side(tmp_path_factory.mktemp("sdk"), fast=False) as s:
        assert s.gate is None
        yield s


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def fast(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Side]:
    async with side(tmp_path_factory.mktemp("fast"), fast=True) as s:
        assert s.gate is not None
        yield s


async def both(
    sdk: Side,
    fast: Side,
    body: dict[str, Any],
    headers: dict[str, str],
    *,
    served: bool = True,
    url: str = URL,
) -> Answer:
    """POST to both apps: the same answer, from the fast app's fast path (or, ``served=False``, after
    its fast path handed the request to the SDK)."""
    gate = fast.gate
    assert gate is not None
    before = (gate.served, gate.deferred)
    expected = await sdk.post(body, headers, url)
    answered = await fast.post(body, headers, url)
    assert (gate.served, gate.deferred) == (before[0] + served, before[1] + (not served)), "wrong path"
    assert answered == expected
    return answered


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("name", CALLABLE)
async def test_every_tool_call_is_identical(sdk: Side, fast: Side, era: str | None, name: str) -> None:
    answer = await both(
        sdk, fast, *mcp_request(era, "tools/call", {"name": name, "arguments": EXAMPLES[name]})
    )
    result = answer.json()["result"]
    assert answer.status == 200 and result["isError"] is False and result["structuredContent"]
    assert ("resultType" in result) == (era == MODERN)


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("uri", RESOURCE_URIS)
async def test_every_resource_read_is_identical(sdk: Side, fast: Side, era: str | None, uri: str) -> None:
    answer = await both(sdk, fast, *mcp_request(era, "resources/read", {"uri": uri}))
    contents = answer.json()["result"]["contents"]
    assert contents[0]["uri"] == uri and len(contents[0]["text"]) > 50


@pytest.mark.parametrize("era", ERAS)
async def test_every_resource_template_is_identical(sdk: Side, fast: Side, era: str | None) -> None:
    """One instance of each template (its variables' first values, from the content)."""
    ctx = ToolContext(fast.app.state.services)
    templates = fast.app.state.registry.templates
    assert templates
    for template in templates:
        uri = template.uri_template
        for variable in template.variables:
            uri = uri.replace(f"{{{variable}}}", next(iter(template.choices[variable](ctx))))
        answer = await both(sdk, fast, *mcp_request(era, "resources/read", {"uri": uri}))
        assert answer.json()["result"]["contents"][0]["uri"] == uri


@pytest.mark.parametrize("era", ERAS)
async def test_tool_listing_is_identical(sdk: Side, fast: Side, era: str | None) -> None:
    for id_ in (1, "list-1", 2):  # the second answer of an era comes from the fast path's cache
        answer = await both(sdk, fast, *mcp_request(era, "tools/list", {}, id_=id_))
        assert answer.json()["id"] == id_
        assert sorted(t["name"] for t in answer.json()["result"]["tools"]) == sorted(TOOL_NAMES)


@pytest.mark.parametrize("era", [e for e in ERAS if e != MODERN])  # 2026-07-28 has no ping
async def test_ping_is_identical(sdk: Side, fast: Side, era: str | None) -> None:
    for body, headers in (mcp_request(era, "ping"), mcp_request(era, "ping", {})):
        assert (await both(sdk, fast, body, headers)).json()["result"] == {}


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize(("name", "arguments"), TOOL_ERRORS)
async def test_tool_errors_are_identical(
    sdk: Side, fast: Side, era: str | None, name: str, arguments: dict[str, Any]
) -> None:
    answer = await both(sdk, fast, *mcp_request(era, "tools/call", {"name": name, "arguments": arguments}))
    reply = answer.json()
    if name == "launch_rockets":
        assert reply["error"]["code"] == -32602 and "launch_rockets" in reply["error"]["message"]
        assert answer.status == (400 if era == MODERN else 200)  # 2026-07-28 maps codes to statuses
    else:
        assert reply["result"]["isError"] is True and "structuredContent" not in reply["result"]


@pytest.mark.parametrize("era", ERAS)
async def test_an_unknown_resource_is_left_to_the_sdk(sdk: Side, fast: Side, era: str | None) -> None:
    # A failed read is repeated by the SDK, which words the error for the era (reads change nothing).
    answer = await both(sdk, fast, *mcp_request(era, "resources/read", {"uri": "kb://nothing"}), served=False)
    assert answer.json()["error"]["data"] == {"uri": "kb://nothing"}


@pytest.mark.parametrize("era", ERAS)
async def test_call_without_arguments_and_string_ids_are_identical(
    sdk: Side, fast: Side, era: str | None
) -> None:
    answer = await both(sdk, fast, *mcp_request(era, "tools/call", {"name": "get_company_info"}, id_="a-b"))
    assert answer.json()["id"] == "a-b"
    answer = await both(sdk, fast, *mcp_request(era, "tools/call", {"name": "list_models"}, id_=2**40))
    assert answer.json()["id"] == 2**40


async def test_non_ascii_arguments_and_results_are_identical(sdk: Side, fast: Side) -> None:
    # The handshake transport writes UTF-8 and the 2026-07-28 entry escapes it: each era keeps its own.
    for era in ERAS:
        body, headers = mcp_request(
            era, "tools/call", {"name": "get_weather", "arguments": {"location": "Zürich"}}
        )
        answer = await both(sdk, fast, body, headers)
        assert (b"\\u00fc" in answer.body) == (era == MODERN)


# The hot request kinds of 2026-07-28, as a bare client (the bench's) and a full one send them.
MODERN_KINDS = [
    ("tools/call", {"name": "get_company_info", "arguments": {}}),
    ("tools/call", {"name": "get_weather", "arguments": {"location": "Paris"}}),
    ("tools/list", {}),
    ("resources/read", {"uri": RESOURCE_URIS[0]}),
]
BARE_ENVELOPE = {k: v for k, v in ENVELOPE.items() if not k.endswith("/clientInfo")}


@pytest.mark.parametrize(("method", "params"), MODERN_KINDS)
@pytest.mark.parametrize("envelope", [ENVELOPE, BARE_ENVELOPE], ids=["client-info", "bare"])
@pytest.mark.parametrize("url", [URL, f"{URL}/"])
async def test_modern_requests_of_every_kind_are_identical(
    sdk: Side, fast: Side, method: str, params: dict[str, Any], envelope: dict[str, Any], url: str
) -> None:
    body, headers = mcp_request(MODERN, method, params, id_=7)
    body["params"]["_meta"] = envelope
    answer = await both(sdk, fast, body, headers, url=url)
    result = answer.json()["result"]
    assert answer.status == 200 and result["resultType"] == "complete" and answer.json()["id"] == 7
    assert "mcp-version" in dict(answer.headers)  # the endpoint's own header line rides the fast answer too


async def test_kept_answers_are_the_sdks_and_each_call_gets_its_own(sdk: Side, fast: Side) -> None:
    """Serialised answers are kept by their text (agent_server/mcp/fast.py, ``_answer_key``): calls
    that alternate between answers, repeat them and change their id still get the SDK's bytes."""
    cities = ["Paris", "Berlin", "Paris", "Zürich", "Berlin", "Paris"]
    seen: dict[str, bytes] = {}
    places: dict[str, str] = {}
    for n, city in enumerate(cities):
        for era in ERAS:
            params = {"name": "get_weather", "arguments": {"location": city}}
            answer = await both(sdk, fast, *mcp_request(era, "tools/call", params, id_=n))
            assert answer.json()["id"] == n
            place = answer.json()["result"]["structuredContent"]["location"]
            assert places.setdefault(city, place) == place
            result = answer.body[answer.body.index(b'"result"') :]
            assert seen.setdefault(f"{era}-{city}", result) == result  # the same answer, the same bytes
    assert len(set(places.values())) == 3  # three places, each its own answer


async def test_the_kept_answers_are_bounded(fast: Side) -> None:
    from agent_server.mcp.fast import MAX_ANSWERS

    gate = fast.gate
    assert gate is not None
    for n in range(MAX_ANSWERS + 20):
        body, headers = mcp_request(
            MODERN, "tools/call", {"name": "faq_lookup", "arguments": {"query": f"q{n}"}}
        )
        assert (await fast.post(body, headers)).status == 200
    assert 0 < len(gate.fast._answers) <= MAX_ANSWERS
