"""Change notifications when the content pack changes: ``subscriptions/listen`` (2026-07-28) and
``resources/subscribe`` sessions, in one process and across workers through Redis pub/sub."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, ExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
import redis

from agent_server.capabilities.services import build_services, close_services
from agent_server.foundation.settings import Settings
from agent_server.mcp.events import LocalEvents
from agent_server.mcp.watch import ContentWatch
from agent_server.storage.kv import MemoryKV
from tests.conftest import LiveServer
from tests.mcp.support import URL, WAIT, edit, eventually, live, open_session, request, sse
from tools import build_registry

UPDATED = "notifications/resources/updated"


def settings(data: Path, content: Path, **changes: Any) -> Settings:
    base = {
        "redis_url": None,
        "database_url": None,
        "content_dir": content,
        "mcp_content_check_seconds": 0.05,
    }
    return Settings(data_dir=data, **{**base, **changes})


@asynccontextmanager
async def listen(
    server: LiveServer, *uris: str
) -> AsyncIterator[AsyncIterator[tuple[str | None, dict | None]]]:
    """A 2026-07-28 listen stream for ``uris``, once the server has acknowledged it."""
    body, headers = request(
        "subscriptions/listen", {"notifications": {"resourceSubscriptions": list(uris)}}, era="2026-07-28"
    )
    async with (
        httpx.AsyncClient(base_url=server.url, timeout=WAIT) as client,
        client.stream("POST", URL, json=body, headers=headers) as response,
    ):
        assert response.headers["content-type"].startswith("text/event-stream")
        frames = sse(response)
        with anyio.fail_after(WAIT):
            _, first = await anext(frames)
        assert first is not None and first["method"] == "notifications/subscriptions/acknowledged"
        assert first["params"]["notifications"]["resourceSubscriptions"] == list(uris)
        yield frames


async def updates(frames: AsyncIterator[tuple[str | None, dict | None]], count: int) -> list[str]:
    heard: list[str] = []
    with anyio.fail_after(WAIT):
        async for _, message in frames:
            if message and message.get("method") == UPDATED:
                assert message["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == 1
                heard.append(message["params"]["uri"])
                if len(heard) == count:
                    break
    return heard


async def test_a_listen_stream_hears_only_what_it_subscribed_to(tmp_path: Path) -> None:
    content = tmp_path / "content"
    content.mkdir()
    with live(settings(tmp_path / "data", content)) as server:
        async with listen(server, "faq://entry/api-key-format", "kb://core") as frames:
            edit(content, "faq.yaml", "API keys are 48 characters", "API keys have 48 characters")
            assert await updates(frames, 1) == ["faq://entry/api-key-format"]  # not faq://catalog
            edit(content, "kb-core.md", "## Product overview", "## Product overview (edited)")
            assert await updates(frames, 1) == ["kb://core"]


async def test_a_broken_content_file_keeps_the_last_good_pack(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    content = tmp_path / "content"
    content.mkdir()
    with live(settings(tmp_path / "data", content)) as server:
        async with listen(server, "kb://core") as frames, httpx.AsyncClient(base_url=server.url) as client:
            edit(content, "kb-core.md", "## Product overview", "## Product overview (edited)")
            edit(content, "plans.yaml", "plans:", "plans: [not, a, plan]\nunused:")
            await eventually(lambda: "does not load" in caplog.text, "the refused reload")
            body, headers = request("resources/read", {"uri": "kb://core"})
            before = (await client.post(URL, json=body, headers=headers)).json()["result"]["contents"][0][
                "text"
            ]
            assert "(edited)" not in before  # the whole reload was refused: the last good pack serves
            remove(content, "plans.yaml")
            assert await updates(frames, 1) == ["kb://core"]
            after = (await client.post(URL, json=body, headers=headers)).json()["result"]["contents"][0][
                "text"
            ]
            assert "## Product overview (edited)" in after


def remove(content: Path, name: str) -> None:
    (content / name).unlink()


def listeners(redis_url: str, channel: str) -> int:
    return redis.Redis.from_url(redis_url).pubsub_numsub(channel)[0][1]


@asynccontextmanager
async def workers(tmp_path: Path, redis_url: str) -> AsyncIterator[tuple[LiveServer, Path]]:
    """Two workers sharing Redis and the content folder; only B watches the content."""
    content = tmp_path / "content"
    content.mkdir()
    prefix = f"agentgate-test-{uuid.uuid4().hex[:8]}:"
    shared = {"redis_url": redis_url, "kv_prefix": prefix, "mcp_sessions": True}
    with ExitStack() as stack:
        a = stack.enter_context(
            live(settings(tmp_path / "a", content, **shared, mcp_content_check_seconds=0))
        )
        stack.enter_context(live(settings(tmp_path / "b", content, **shared)))
        # both workers listen on the channel before anything changes
        await eventually(
            lambda: listeners(redis_url, f"{prefix}mcp:events") == 2, "both workers on the channel"
        )
        yield a, content


@pytest.mark.redis
async def test_a_change_seen_by_one_worker_reaches_streams_and_sessions_on_another(
    tmp_path: Path, redis_url: str
) -> None:
    async with (
        workers(tmp_path, redis_url) as (a, content),
        httpx.AsyncClient(base_url=a.url, timeout=WAIT) as client,
    ):
        session, _ = await open_session(client)
        assert (await session.call("resources/subscribe", {"uri": "kb://full"}))[-1]["result"] == {}
        async with session.stream() as standalone, listen(a, "kb://full") as frames:
            edit(content, "kb-full.md", "## ", "## Changelog\n\nEdited.\n\n## ")
            assert await updates(frames, 1) == ["kb://full"]
            heard = None
            with anyio.fail_after(WAIT):
                async for _, message in sse(standalone):
                    if message and message.get("method") == UPDATED:
                        heard = message["params"]["uri"]
                        break
            assert heard == "kb://full"


async def test_workers_that_all_notice_a_change_announce_it_once(tmp_path: Path) -> None:
    """Every worker sees a change; the claim in the shared KV lets one announce it. Stepped by hand, as
    two workers polling at random moments cannot show a duplicate deterministically."""
    content = tmp_path / "content"
    content.mkdir()
    shared, announced = MemoryKV(), LocalEvents()
    heard: list[str] = []
    announced.subscribe(lambda event: heard.append(event.uri))  # type: ignore[union-attr]
    async with AsyncExitStack() as stack:
        watches = []
        for name in ("a", "b"):
            services = build_services(settings(tmp_path / name, content, mcp_content_check_seconds=3600))
            stack.push_async_callback(close_services, services)
            services.kv = shared
            watch = ContentWatch(build_registry(services.settings), services, announced)
            await stack.enter_async_context(watch.run())  # the baseline; the next poll is an hour away
            watches.append(watch)
        edit(content, "kb-core.md", "## Product overview", "## Product overview (edited)")
        assert [await watch.check() for watch in watches] == [["kb://core"], ["kb://core"]]
    assert heard == ["kb://core"]
