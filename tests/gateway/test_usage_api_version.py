"""Every /v1 usage row names the contract that served it: the pinned API-Version, else the current one,
on the embedded path (SQLite) and through the Redis usage log."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from agent_server.foundation.clock import ManualClock
from agent_server.foundation.settings import Settings
from agent_server.gateway.tables import UsageRecord
from agent_server.gateway.usage import USAGE_LOG, UsageRow, UsageWriter
from agent_server.policies.versions import CURRENT_VERSION, ApiVersion, VersionRegistry
from agent_server.storage.kv import RedisKV
from http_facade.app import create_app
from tests.conftest import BASE_URL, running
from tests.gateway.conftest import Harness, chat_body, key_headers

NOW = datetime.fromtimestamp(ManualClock().now(), tz=UTC)
OLD = "2026-01-05"  # deprecated a month ago, retires in eleven
PREVIEW = "2027-03-01-preview"

AppFactory = Callable[..., AbstractAsyncContextManager[Harness]]


def registry() -> VersionRegistry:
    old = ApiVersion(
        OLD,
        "deprecated",
        deprecated_at=NOW - timedelta(days=30),
        sunset_at=NOW + timedelta(days=335),
        successor=CURRENT_VERSION,
    )
    return VersionRegistry([ApiVersion(CURRENT_VERSION), old])


@pytest.fixture
def make_app(settings: Settings, clock: ManualClock) -> AppFactory:
    @asynccontextmanager
    async def make(**changes: Any) -> AsyncIterator[Harness]:
        application = create_app(settings.model_copy(update=changes), clock=clock, versions=registry())
        async with running(application):
            transport = httpx.ASGITransport(application)
            async with httpx.AsyncClient(transport=transport, base_url=BASE_URL) as client:
                yield Harness(application, client, clock)

    return make


async def call_every_v1_route(h: Harness, key: str) -> list[tuple[str, str | None]]:
    """One request per /v1 route and outcome, pinned as listed; returns (what, pinned version)."""
    calls: list[tuple[str, str | None, str, str, dict[str, Any] | None, int]] = [
        ("chat unpinned", None, "POST", "/v1/chat/completions", chat_body(), 200),
        ("chat current", CURRENT_VERSION, "POST", "/v1/chat/completions", chat_body(), 200),
        ("chat old", OLD, "POST", "/v1/chat/completions", chat_body(), 200),
        ("chat preview", PREVIEW, "POST", "/v1/chat/completions", chat_body(), 200),
        ("stream old", OLD, "POST", "/v1/chat/completions", chat_body(stream=True), 200),
        ("bad model old", OLD, "POST", "/v1/chat/completions", chat_body(model="no-such-model"), 400),
        ("models old", OLD, "GET", "/v1/models", None, 200),
        ("model missing old", OLD, "GET", "/v1/models/no-such-model", None, 404),
        ("models unpinned", None, "GET", "/v1/models", None, 200),
    ]
    for what, pinned, method, path, body, status in calls:
        headers = key_headers(key) | ({"API-Version": pinned} if pinned else {})
        response = await h.client.request(method, path, json=body, headers=headers)
        assert response.status_code == status, (what, response.text)
        assert response.headers["API-Version"] == (pinned or CURRENT_VERSION), what
    return [(what, pinned) for what, pinned, *_ in calls]


async def stored_versions(h: Harness, key_id: str) -> list[str | None]:
    query = select(UsageRecord.api_version).where(UsageRecord.key_id == key_id).order_by(UsageRecord.id)  # type: ignore[arg-type]
    async with h.gateway.db.session() as session:
        return list((await session.execute(query)).scalars())


async def test_usage_rows_carry_the_pinned_or_the_current_version(make_app: AppFactory) -> None:
    async with make_app() as h:
        key_id, key = await h.key(await h.tenant())
        calls = await call_every_v1_route(h, key)
        await h.gateway.usage.flush()
        assert await stored_versions(h, key_id) == [pinned or CURRENT_VERSION for _, pinned in calls]


@pytest.mark.redis
async def test_the_redis_usage_log_carries_the_version(make_app: AppFactory, redis_url: str) -> None:
    prefix = f"agentgate-test-version:{uuid.uuid4().hex}:"
    async with make_app(redis_url=redis_url, kv_prefix=prefix) as h:
        log = h.gateway.services.kv
        assert isinstance(log, RedisKV)
        key_id, key = await h.key(await h.tenant())
        calls = await call_every_v1_route(h, key)
        logged = [UsageRow(*json.loads(item)) for item in await log.head(USAGE_LOG, 100)]
        # In Redis before any flush (durable), each with its version.
        assert [row.api_version for row in logged] == [pinned or CURRENT_VERSION for _, pinned in calls]
        assert all(row.row_token for row in logged)

        # A row left in the log by the previous release (one field shorter) drains with no version.
        previous = UsageRow("ten_x", "key_old_release", "m", "chat", 1, 1, 1.0, 200, "mock", False, 1.8e9)
        await log.push_many(USAGE_LOG, [json.dumps(previous[:-1]).encode()])
        await h.gateway.usage.flush()
        assert await log.head(USAGE_LOG, 100) == []
        assert await stored_versions(h, key_id) == [pinned or CURRENT_VERSION for _, pinned in calls]
        assert await stored_versions(h, "key_old_release") == [None]
        await log.client.delete(log.prefix + USAGE_LOG)


async def test_rows_queued_in_process_keep_their_version(make_app: AppFactory) -> None:
    """The embedded writer (no Redis) and the batch insert pass the field through unchanged."""
    async with make_app() as h:
        writer = UsageWriter(h.gateway.db)
        row = UsageRow("ten_y", "key_direct", "m", "chat", 1, 1, 1.0, 200, "mock", False, 1.8e9)
        await writer.append(row._replace(api_version=PREVIEW))
        writer.record(row)  # a caller that names no version (the admin playground) stores NULL
        assert await writer.flush() == 2
        assert await stored_versions(h, "key_direct") == [PREVIEW, None]
