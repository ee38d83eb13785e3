"""Stateful sessions (``mcp_sessions`` on) over a real uvicorn: what only a session offers.

Raw HTTP with streamed SSE, so each step of the protocol is visible: the session id, the standalone
``GET`` stream, ``resources/subscribe`` and the update when the content pack changes on disk,
``logging/setLevel``, resuming a broken stream with ``Last-Event-ID``, and ``DELETE``.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio
import httpx
import pytest
from pydantic import BaseModel

from agent_server.capabilities.context import ToolContext
from agent_server.capabilities.registry import Registry, tool
from agent_server.foundation.settings import Settings
from tests.conftest import LiveServer
from tests.mcp.support import BOTH, SESSION_VERSION, URL, WAIT, edit, live, open_session, sse
from tools import build_registry

RELEASE = threading.Event()  # lets the slow tool finish


class Finished(BaseModel):
    finished: bool


@tool(title="Slow lookup", open_world=True)
async def slow_lookup(ctx: ToolContext) -> Finished:
    """Waits until the test lets it finish (a long tool)."""
    await anyio.to_thread.run_sync(RELEASE.wait, WAIT)
    return Finished(finished=True)


def registry_with_a_slow_tool(settings: Settings) -> Registry:
    registry = build_registry(settings)
    registry.add_tool(slow_lookup)
    return registry


@pytest.fixture(scope="module")
def content(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("content")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, content: Path) -> Iterator[LiveServer]:
    settings = Settings(
        data_dir=tmp_path_factory.mktemp("sessions"),
        redis_url=None,
        database_url=None,
        content_dir=content,
        mcp_sessions=True,
        mcp_content_check_seconds=0.05,
        mcp_progress_seconds=0.05,
    )
    with live(settings, registry_with_a_slow_tool) as running:
        yield running


@pytest.fixture
async def client(server: LiveServer) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=server.url, timeout=WAIT) as c:
        yield c


async def test_initialize_opens_a_session_declaring_logging_and_subscriptions(
    client: httpx.AsyncClient,
) -> None:
    _, result = await open_session(client)
    assert result["capabilities"]["logging"] == {}
    assert result["capabilities"]["resources"] == {"subscribe": True, "listChanged": False}
    manifest = (await client.get(URL)).json()
    assert manifest["capabilities"] == result["capabilities"] and manifest["transport"]["sessions"] is True


async def test_a_client_without_sse_and_requests_without_a_session_stay_stateless(
    client: httpx.AsyncClient,
) -> None:
    params = {
        "protocolVersion": SESSION_VERSION,
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}
    response = await client.post(URL, json=body, headers={"Accept": "application/json"})
    assert "mcp-session-id" not in response.headers
    assert "logging" not in response.json()["result"]["capabilities"]
    listed = await client.post(URL, json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    assert "slow_lookup" in {t["name"] for t in listed.json()["result"]["tools"]}


async def test_log_notifications_follow_the_level_the_session_set(client: httpx.AsyncClient) -> None:
    session, _ = await open_session(client)
    call = {"name": "get_company_info", "arguments": {}}
    logged = [
        m["params"]
        for m in await session.call("tools/call", call)
        if m.get("method") == "notifications/message"
    ]
    assert logged and logged[0]["level"] == "info" and "get_company_info: answered" in logged[0]["data"]
    assert (await session.call("logging/setLevel", {"level": "warning"}))[-1]["result"] == {}
    quiet = await session.call("tools/call", call)
    assert not [m for m in quiet if m.get("method") == "notifications/message"]
    failed = await session.call("tools/call", {"name": "get_pricing", "arguments": {"category": "gadgets"}})
    warning = next(m["params"] for m in failed if m.get("method") == "notifications/message")
    assert warning["level"] == "warning" and "category" in warning["data"]


async def test_a_subscribed_session_hears_when_the_content_pack_changes(
    client: httpx.AsyncClient, content: Path
) -> None:
    session, _ = await open_session(client)
    async with session.stream() as stream:
        assert stream.status_code == 200
        for uri in ("kb://core", "faq://entry/api-key-format"):
            assert (await session.call("resources/subscribe", {"uri": uri}))[-1]["result"] == {}
        unknown = await session.call("resources/subscribe", {"uri": "kb://nothing"})
        assert unknown[-1]["error"]["code"] == -32602
        edit(
            content,
            "kb-core.md",
            "## Product overview",
            "## Changelog\n\nThe pack changed.\n\n## Product overview",
        )
        heard: list[str] = []
        with anyio.fail_after(WAIT):
            async for _, message in sse(stream):
                if message and message.get("method") == "notifications/resources/updated":
                    heard.append(message["params"]["uri"])
                    if len(heard) == 1:  # now an unsubscribed resource (faq://catalog) and a subscribed one
                        edit(content, "faq.yaml", "API keys are 48 characters", "API keys have 48 characters")
                    else:
                        break
    assert heard == ["kb://core", "faq://entry/api-key-format"]
    read = await session.call("resources/read", {"uri": "kb://core"})
    assert "The pack changed." in read[-1]["result"]["contents"][0]["text"]
    edit(content)


async def test_a_broken_stream_is_resumed_with_last_event_id(client: httpx.AsyncClient) -> None:
    RELEASE.clear()
    session, _ = await open_session(client)
    body = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "slow_lookup", "arguments": {}},
    }
    async with client.stream("POST", URL, json=body, headers={**session.headers, "Accept": BOTH}) as stream:
        with anyio.fail_after(WAIT):
            primed = await anext(aiter(sse(stream)))
    assert primed[0] and primed[1] is None  # the priming event: an id to resume from, no message
    RELEASE.set()  # the call finishes while nobody listens
    answer = None
    async with session.stream(**{"Last-Event-ID": primed[0]}) as resumed:
        with anyio.fail_after(WAIT):
            async for _, message in sse(resumed):
                if message and message.get("id") == 7:
                    answer = message
                    break
    assert answer is not None and answer["result"]["structuredContent"] == {"finished": True}


async def test_one_session_cannot_resume_another_sessions_stream(client: httpx.AsyncClient) -> None:
    RELEASE.set()
    first, _ = await open_session(client)
    body = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "get_company_info", "arguments": {}},
    }
    answered = await client.post(URL, json=body, headers={**first.headers, "Accept": BOTH})
    event_ids = [line[3:].strip() for line in answered.text.splitlines() if line.startswith("id:")]
    assert event_ids
    second, _ = await open_session(client)
    async with second.stream(**{"Last-Event-ID": event_ids[0]}) as foreign:
        with anyio.fail_after(WAIT):
            replayed = [message async for _, message in sse(foreign) if message]
    assert replayed == []


async def test_delete_ends_the_session(client: httpx.AsyncClient) -> None:
    session, _ = await open_session(client)
    ended = await client.delete(URL, headers=session.headers)
    assert ended.status_code == 200
    gone = await client.post(
        URL,
        json={"jsonrpc": "2.0", "id": 3, "method": "tools/list"},
        headers={**session.headers, "Accept": BOTH},
    )
    assert gone.status_code == 404 and gone.json()["error"]["message"] == "Session not found"
    unnamed = await client.delete(URL)  # the transport's answer to a request without its session id
    assert unnamed.status_code == 400 and "Mcp-Session-Id" in unnamed.json()["error"]["message"]


async def test_a_long_tool_reports_progress_while_it_runs(client: httpx.AsyncClient) -> None:
    """Stateless: a progress token is enough. The tool finishes only once a heartbeat has arrived."""
    RELEASE.clear()
    params = {"name": "slow_lookup", "arguments": {}, "_meta": {"progressToken": 11}}
    body = {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": params}
    progress: list[dict] = []
    answer = None
    async with client.stream("POST", URL, json=body, headers={"Accept": BOTH}) as stream:
        with anyio.fail_after(WAIT):
            async for _, message in sse(stream):
                if message and message.get("method") == "notifications/progress":
                    progress.append(message["params"])
                    if len(progress) == 2:  # the start and a heartbeat
                        RELEASE.set()
                elif message and message.get("id") == 5:
                    answer = message
                    break
    assert answer is not None and answer["result"]["structuredContent"] == {"finished": True}
    assert [p["progress"] for p in progress][:2] == [0, 1] and "total" not in progress[1]
    assert progress[-1]["progress"] == progress[-1]["total"] == len(progress) - 1
    assert [p["progress"] for p in progress] == sorted({p["progress"] for p in progress})
