"""The response cache over HTTP, in-process store: off by default, hit and miss, the canonical body,
tenants kept apart, the TTL on the service clock, bypass, what is never cached, size bounds, and a hit
still entitled and metered without tokens."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import select

from agent_server.gateway.tables import UsageRecord
from tests.gateway.conftest import MODEL, Harness, HarnessFactory, chat_body, key_headers

CACHE = "x-agentgate-cache"
TTL = 60.0


@pytest.fixture
async def cached(make_harness: HarnessFactory) -> AsyncIterator[Harness]:
    async with make_harness(response_cache=True, response_cache_ttl_seconds=TTL) as h:
        yield h


async def new_key(h: Harness, plan: str = "professional") -> str:
    return (await h.key(await h.tenant(plan), ("chat", "embeddings", "models")))[1]


async def chat(h: Harness, key: str, body: dict[str, Any] | None = None, **headers: str) -> Any:
    body = body if body is not None else chat_body(temperature=0)
    return await h.client.post("/v1/chat/completions", json=body, headers={**key_headers(key), **headers})


async def rows(h: Harness) -> list[UsageRecord]:
    await h.gateway.usage.flush()
    async with h.gateway.db.session() as session:
        return list((await session.execute(select(UsageRecord).order_by(UsageRecord.id))).scalars())


async def test_off_by_default(harness: Harness) -> None:
    key = await new_key(harness)
    first, second = await chat(harness, key), await chat(harness, key)
    assert CACHE not in first.headers and first.json()["id"] != second.json()["id"]
    assert harness.app.state.response_cache is None


async def test_a_repeat_is_a_hit_metered_without_tokens(cached: Harness) -> None:
    key = await new_key(cached)
    miss, hit = await chat(cached, key), await chat(cached, key)
    assert (miss.headers[CACHE], hit.headers[CACHE]) == ("miss", "hit")
    assert hit.content == miss.content and hit.status_code == 200
    assert "x-ratelimit-remaining" in hit.headers
    first, second = (await rows(cached))[-2:]
    assert first.backend == "mock" and first.completion_tokens > 0
    assert (second.backend, second.status, second.prompt_tokens, second.completion_tokens) == (
        "cache",
        200,
        0,
        0,
    )
    assert second.endpoint == "chat" and second.model == MODEL


async def test_the_key_is_the_canonical_body(cached: Harness) -> None:
    key = await new_key(cached)
    await chat(
        cached, key, {"model": MODEL, "temperature": 0, "messages": [{"role": "user", "content": "Hi"}]}
    )
    reordered = {"messages": [{"content": "Hi", "role": "user"}], "temperature": 0, "model": MODEL}
    assert (await chat(cached, key, reordered)).headers[CACHE] == "hit"
    other = {**reordered, "seed": 1}
    assert (await chat(cached, key, other)).headers[CACHE] == "miss"


async def test_tenants_never_share_entries_and_their_keys_do(cached: Harness) -> None:
    tenant = await cached.tenant("professional")
    _, one = await cached.key(tenant)
    _, two = await cached.key(tenant)
    other = await new_key(cached)
    assert (await chat(cached, one)).headers[CACHE] == "miss"
    assert (await chat(cached, two)).headers[CACHE] == "hit"
    answer = await chat(cached, other)
    assert answer.headers[CACHE] == "miss"


async def test_entries_expire_after_the_ttl(cached: Harness) -> None:
    key = await new_key(cached)
    await chat(cached, key)
    cached.clock.advance(TTL - 1)
    assert (await chat(cached, key)).headers[CACHE] == "hit"
    cached.clock.advance(2)
    assert (await chat(cached, key)).headers[CACHE] == "miss"


async def test_a_client_may_skip_the_cache(cached: Harness) -> None:
    key = await new_key(cached)
    skipped = await chat(cached, key, **{"X-Agentgate-Cache": "no-store"})
    assert skipped.headers[CACHE] == "bypass"
    assert (await chat(cached, key)).headers[CACHE] == "miss"  # the skipped answer was not stored
    assert (await chat(cached, key, **{"Cache-Control": "no-cache"})).headers[CACHE] == "bypass"
    assert (await chat(cached, key)).headers[CACHE] == "hit"


@pytest.mark.parametrize(
    "body",
    [
        chat_body(),
        chat_body(temperature=0.7),
        chat_body(temperature=0, n=2),
        chat_body(temperature=0, stream=True),
    ],
    ids=["default temperature", "temperature", "n", "stream"],
)
async def test_sampled_answers_and_streams_are_not_cached(cached: Harness, body: dict[str, Any]) -> None:
    key = await new_key(cached)
    assert [(await chat(cached, key, body)).headers[CACHE] for _ in range(2)] == ["bypass", "bypass"]


async def test_a_setting_caches_sampled_answers_too(make_harness: HarnessFactory) -> None:
    async with make_harness(response_cache=True, response_cache_sampled=True) as h:
        key = await new_key(h)
        body = chat_body(n=2)
        assert [(await chat(h, key, body)).headers[CACHE] for _ in range(2)] == ["miss", "hit"]
        streamed = await chat(h, key, chat_body(stream=True))
        assert streamed.headers[CACHE] == "bypass"


async def test_embeddings_and_v2_chat_are_cached(cached: Harness) -> None:
    key = await new_key(cached)
    body = {"model": "text-embedding-3-small", "input": "the sea"}
    answers = [
        await cached.client.post("/v1/embeddings", json=body, headers=key_headers(key)) for _ in range(2)
    ]
    assert [a.headers[CACHE] for a in answers] == ["miss", "hit"] and answers[0].content == answers[1].content
    v2 = [
        await cached.client.post(
            "/v2/chat/completions", json=chat_body(temperature=0), headers=key_headers(key)
        )
        for _ in range(2)
    ]
    assert [a.headers[CACHE] for a in v2] == ["miss", "hit"]


async def test_a_hit_is_still_entitled(cached: Harness) -> None:
    admin = await cached.tenant("professional")
    _, key = await cached.key(admin)
    assert (await chat(cached, key)).headers[CACHE] == "miss"
    narrowed = await cached.client.post(
        "/admin/api-keys",
        json={"name": "narrow", "scopes": ["chat"], "models": ["gpt-4o-mini"]},
        headers=admin.headers,
    )
    refused = await chat(cached, narrowed.json()["key"])
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "model_not_allowed"
    assert (await rows(cached))[-1].status == 403


async def test_the_store_is_bounded_in_bytes_and_per_answer(make_harness: HarnessFactory) -> None:
    async with make_harness(
        response_cache=True, response_cache_max_bytes=65_536, response_cache_max_entry_bytes=8_192
    ) as h:
        key = await new_key(h)

        async def embed(text: str, dimensions: int) -> str:
            body = {
                "model": "text-embedding-3-small",
                "input": text,
                "dimensions": dimensions,
                "encoding_format": "base64",
            }
            return (await h.client.post("/v1/embeddings", json=body, headers=key_headers(key))).headers[CACHE]

        assert [await embed("too large", 1536) for _ in range(2)] == ["miss", "miss"]  # > 8 KiB: not stored
        texts = [f"text {i}" for i in range(12)]  # about 6 KiB each: not all fit in 64 KiB
        assert {await embed(text, 1024) for text in texts} == {"miss"}
        assert await embed(texts[-1], 1024) == "hit"
        assert await embed(texts[0], 1024) == "miss"  # the least recently used went first
        assert h.app.state.response_cache.store.size <= 65_536
