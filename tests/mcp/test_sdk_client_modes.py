"""The official ``mcp`` SDK client judges the errors and capabilities, in every mode it connects with.

Modes: ``auto`` (probes ``server/discover``, speaks 2026-07-28), a 2026-07-28 pin, ``legacy`` (the
initialize handshake, 2025-11-25), a hand-made 2025-06-18 handshake, and a client that accepts only
``text/event-stream`` (handshake and 2026-07-28). Each must see: an unknown prompt and a bogus cursor
as -32602, declared capabilities that are all served (and nothing served that is not declared), the
unknown-resource code of its era, and, for the SSE-only client, every answer as an event stream.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager

import httpx2
import pytest
from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import (
    ClientCapabilities,
    DiscoverResult,
    Implementation,
    InitializedNotification,
    InitializeRequest,
    InitializeRequestParams,
    InitializeResult,
    PaginatedRequestParams,
    PromptReference,
    ResourceTemplateReference,
)

from agent_server.foundation.settings import Settings
from tests.conftest import LiveServer
from tests.mcp.support import MODERN, URL, live

MODES = ["auto", MODERN, "legacy", "2025-06-18 handshake", "sse-only legacy", "sse-only 2026-07-28"]
pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with live(
        Settings(data_dir=tmp_path_factory.mktemp("clients"), redis_url=None, database_url=None)
    ) as running:
        yield running


def sse_only_http_client(seen: list[str]) -> httpx2.AsyncClient:
    async def accept_only_sse(request: httpx2.Request) -> None:
        if request.method == "POST":
            request.headers["Accept"] = "text/event-stream"

    async def record(response: httpx2.Response) -> None:
        if response.request.method == "POST" and response.status_code == 200:
            seen.append(response.headers.get("content-type", ""))

    client = create_mcp_http_client()
    client.event_hooks = {"request": [accept_only_sse], "response": [record]}
    return client


async def ask_capabilities(session: ClientSession) -> None:
    """A client pinned to 2026-07-28 starts with no capabilities; it learns them from server/discover."""
    session.adopt(DiscoverResult.model_validate(await session.send_discover(MODERN)))


@asynccontextmanager
async def connect(url: str, mode: str, seen: list[str]) -> AsyncIterator[ClientSession]:
    async with AsyncExitStack() as stack:
        if mode.startswith("sse-only"):
            http = await stack.enter_async_context(sse_only_http_client(seen))
            transport = streamable_http_client(url, http_client=http)
            pinned = "legacy" if mode.endswith("legacy") else MODERN
            session = (await stack.enter_async_context(Client(transport, mode=pinned))).session
            if pinned == MODERN:
                await ask_capabilities(session)
            yield session
        elif mode == "2025-06-18 handshake":
            read, write = await stack.enter_async_context(streamable_http_client(url))
            session = await stack.enter_async_context(ClientSession(read, write))
            params = InitializeRequestParams(
                protocol_version="2025-06-18",
                capabilities=ClientCapabilities(),
                client_info=Implementation(name="agentgate-tests", version="1"),
            )
            result = await session.send_request(InitializeRequest(params=params), InitializeResult)
            assert result.protocol_version == "2025-06-18"
            session.adopt(result)
            await session.send_notification(InitializedNotification())
            yield session
        else:
            session = (await stack.enter_async_context(Client(url, mode=mode))).session
            if mode == MODERN:
                await ask_capabilities(session)
            yield session


async def refused(call: object, code: int) -> MCPError:
    with pytest.raises(MCPError) as raised:
        await call  # type: ignore[misc]
    assert raised.value.code == code, raised.value
    return raised.value


@pytest.mark.parametrize("mode", MODES)
async def test_the_sdk_client_sees_correct_errors_and_honest_capabilities(
    server: LiveServer, mode: str
) -> None:
    seen: list[str] = []
    async with connect(f"{server.url}{URL}", mode, seen) as session:
        modern = session.protocol_version == MODERN
        assert modern == (mode in ("auto", MODERN, "sse-only 2026-07-28"))

        unknown = await refused(session.get_prompt("no_such_prompt"), -32602)
        assert "no_such_prompt" in unknown.message
        bogus = PaginatedRequestParams(cursor="not-one-of-ours")
        for lister in (
            session.list_tools,
            session.list_resources,
            session.list_resource_templates,
            session.list_prompts,
        ):
            await refused(lister(params=bogus), -32602)
        await refused(session.read_resource("kb://nothing"), -32602 if modern else -32002)

        capabilities = session.server_capabilities
        assert capabilities is not None
        assert capabilities.tools and capabilities.prompts and capabilities.completions is not None
        assert (await session.list_tools()).tools and (await session.list_prompts()).prompts
        assert len((await session.list_resource_templates()).resource_templates) == 2
        plans = await session.complete(
            PromptReference(type="ref/prompt", name="choose_gateway_plan"), {"name": "plan", "value": "ent"}
        )
        assert plans.completion.values == ["enterprise"]
        template = ResourceTemplateReference(type="ref/resource", uri="pricing://table/{category}")
        assert (
            await session.complete(template, {"name": "category", "value": "hard"})
        ).completion.values == ["hardware"]
        prompt = await session.get_prompt("choose_gateway_plan", {"needs": "a small team"})
        assert "Starter" in prompt.messages[0].content.text
        assert capabilities.resources is not None
        if modern:  # listen streams deliver changes; logging is a per-request opt-in
            assert capabilities.logging is not None and capabilities.resources.subscribe is True
        else:  # stateless: neither is declared, and neither is served
            assert capabilities.logging is None and capabilities.resources.subscribe is False
            await refused(session.set_logging_level("info"), -32601)
            await refused(session.subscribe_resource("kb://core"), -32601)

    if mode.startswith("sse-only"):
        assert seen and all(kind.startswith("text/event-stream") for kind in seen), seen
