"""The response cache on Redis: two apps (two processes' worth of state) share its entries, which
carry the TTL, and a Redis outage sends requests upstream instead of failing them."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
import redis.asyncio as redis

from tests.gateway.conftest import HarnessFactory, chat_body, key_headers

pytestmark = pytest.mark.redis
CACHE = "x-agentgate-cache"


async def test_two_apps_share_one_cache_with_its_ttl(
    make_harness: HarnessFactory, redis_url: str, tmp_path: Path
) -> None:
    prefix = f"test-cache-{uuid.uuid4().hex[:8]}:"
    shared = {"redis_url": redis_url, "data_dir": tmp_path, "kv_prefix": prefix, "response_cache": True}
    async with (
        make_harness(**shared, response_cache_ttl_seconds=90) as a,
        make_harness(**shared, response_cache_ttl_seconds=90) as b,
    ):
        admin = await a.tenant("professional")
        _, key = await a.key(admin)
        other = (await a.key(await a.tenant("professional")))[1]
        body = chat_body(temperature=0)
        miss = await a.client.post("/v1/chat/completions", json=body, headers=key_headers(key))
        hit = await b.client.post("/v1/chat/completions", json=body, headers=key_headers(key))
        assert (miss.headers[CACHE], hit.headers[CACHE]) == ("miss", "hit") and hit.content == miss.content
        apart = await b.client.post("/v1/chat/completions", json=body, headers=key_headers(other))
        assert apart.headers[CACHE] == "miss"  # another tenant, same body
        client = redis.from_url(redis_url)
        try:
            stored = [k async for k in client.scan_iter(match=f"{prefix}response-cache:*")]
            assert len(stored) == 2 and {admin.id in k.decode() for k in stored} == {True, False}
            assert 80_000 < await client.pttl(stored[0]) <= 90_000
        finally:
            await client.delete(*stored)
            await client.aclose()


async def test_a_redis_outage_sends_requests_upstream(make_harness: HarnessFactory, tmp_path: Path) -> None:
    dead = "redis://127.0.0.1:1/0"  # nothing listens there
    async with make_harness(redis_url=dead, data_dir=tmp_path, response_cache=True) as h:
        _, key = await h.key(await h.tenant("professional"))
        answers = [
            await h.client.post(
                "/v1/chat/completions", json=chat_body(temperature=0), headers=key_headers(key)
            )
            for _ in range(2)
        ]
        assert [a.status_code for a in answers] == [200, 200]
        assert [a.headers[CACHE] for a in answers] == ["miss", "miss"]
