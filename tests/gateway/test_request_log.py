"""The request log over HTTP: what a real ``openai`` SDK call leaves in it (JSON, a stream with its
time to first token, an upstream error with its code, a cache hit), ``GET /admin/logs`` filters and
cursor paging, bad query values as 400s naming them, and tenants kept apart."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import openai
import pytest

from agent_server.foundation.settings_llm import UpstreamConfig
from tests.gateway.conftest import MODEL, Harness, HarnessFactory, TenantAdmin, chat_body, key_headers
from tests.gateway.test_keys_settings import MESSAGES, sdk
from tests.llm.fake_upstream import FakeUpstream

LIVE_MODEL, UPSTREAM_MODEL = "gpt-4o-mini", "upstream-mini"  # priced by models.yaml: 15 / 60 cents per MTok


@pytest.fixture
def upstream() -> Iterator[FakeUpstream]:
    with FakeUpstream() as server:
        yield server


@pytest.fixture
async def live(make_harness: HarnessFactory, upstream: FakeUpstream) -> AsyncIterator[Harness]:
    config = UpstreamConfig.model_validate(
        {"name": "up", "base_url": upstream.base_url, "models": {LIVE_MODEL: UPSTREAM_MODEL}}
    )
    async with make_harness(mode="production", upstreams=[config], response_cache=True, llm_retries=0) as h:
        yield h


async def logs(h: Harness, admin: TenantAdmin, **query: Any) -> httpx.Response:
    return await h.client.get("/admin/logs", params=query, headers=admin.headers)


async def listed(h: Harness, admin: TenantAdmin, **query: Any) -> list[dict[str, Any]]:
    answer = await logs(h, admin, **query)
    assert answer.status_code == 200, answer.text
    return answer.json()["data"]


async def test_sdk_calls_are_logged_with_what_served_them(live: Harness, upstream: FakeUpstream) -> None:
    admin = await live.tenant("enterprise")
    key_id, key = await live.key(admin)
    async with sdk(live, key) as client:
        chat = client.chat.completions.with_raw_response
        first = await chat.create(model=LIVE_MODEL, messages=MESSAGES, temperature=0)  # type: ignore[arg-type]
        again = await chat.create(model=LIVE_MODEL, messages=MESSAGES, temperature=0)  # type: ignore[arg-type]
        assert (first.headers["x-agentgate-cache"], again.headers["x-agentgate-cache"]) == ("miss", "hit")
        streamed = await chat.create(model=LIVE_MODEL, messages=MESSAGES, stream=True)  # type: ignore[arg-type]
        text = "".join([c.choices[0].delta.content or "" async for c in streamed.parse() if c.choices])
        assert text == "Hello from the upstream!"
        upstream.script.fail_times, upstream.script.fail_status = 1, 503
        with pytest.raises(openai.APIStatusError) as failed:
            await client.chat.completions.create(model=LIVE_MODEL, messages=MESSAGES)  # type: ignore[arg-type]
    error, stream, hit, miss = await listed(live, admin)

    assert [e["request_id"] for e in (miss, hit, stream)] == [
        r.headers["x-request-id"] for r in (first, again, streamed)
    ]
    assert error["request_id"] == failed.value.response.headers["x-request-id"]
    for entry in (error, stream, hit, miss):
        assert entry["key"] == {"id": key_id, "name": "test"}
        assert (entry["model"], entry["endpoint"]) == (LIVE_MODEL, "chat")
    # Served by the upstream "up" as its own id; the usage the SDK saw is the row's, and its price.
    usage = first.parse().usage
    assert usage is not None
    assert (miss["upstream"], miss["model_served"], miss["status"], miss["cache_hit"]) == (
        "up",
        UPSTREAM_MODEL,
        200,
        False,
    )
    assert miss["usage"]["prompt_tokens"] == usage.prompt_tokens
    assert miss["usage"]["completion_tokens"] == usage.completion_tokens
    assert miss["cost_micros"] == usage.prompt_tokens * 15 + usage.completion_tokens * 60
    assert miss["currency"] == "EUR" and miss["ttft_ms"] is None and miss["stream"] is False
    # The hit: from the cache, no upstream, no tokens, no cost.
    assert (hit["cache_hit"], hit["upstream"], hit["model_served"], hit["cost_micros"]) == (
        True,
        None,
        None,
        0,
    )
    # The stream: its time to the first content, within its whole latency.
    assert stream["stream"] is True and stream["upstream"] == "up"
    assert 0 < stream["ttft_ms"] <= stream["latency_ms"]
    # The upstream's failure: the status and code the SDK got.
    assert error["status"] == failed.value.status_code >= 500
    assert error["error_code"] == failed.value.code and error["error_code"]
    assert error["usage"]["total_tokens"] == 0 and error["cost_micros"] == 0

    detail = await live.client.get(f"/admin/logs/{stream['request_id']}", headers=admin.headers)
    assert detail.status_code == 200
    assert detail.json() == {**stream, "body": None}  # this key keeps no bodies


async def test_filters_narrow_the_list(harness: Harness) -> None:
    admin = await harness.tenant("professional")
    one_id, one = await harness.key(admin)
    two_id, two = await harness.key(admin, ("chat", "embeddings"))
    await harness.chat(one)
    harness.clock.advance(60)
    middle = datetime.fromtimestamp(harness.clock.now(), UTC).isoformat()
    await harness.chat(two, model="agentgate-mock-large")
    await harness.chat(two, model="no-such-model")  # 400 model_not_found
    embedded = await harness.client.post(
        "/v1/embeddings", json={"model": "text-embedding-3-small", "input": "hi"}, headers=key_headers(two)
    )
    assert embedded.status_code == 200

    assert {e["key"]["id"] for e in await listed(harness, admin, key=one_id)} == {one_id}
    assert len(await listed(harness, admin, key=two_id)) == 3
    by_model = await listed(harness, admin, model="agentgate-mock-large")
    assert [(e["model"], e["status"]) for e in by_model] == [("agentgate-mock-large", 200)]
    refused = await listed(harness, admin, status="4xx")
    assert [(e["status"], e["error_code"]) for e in refused] == [(400, "model_not_found")]
    assert len(await listed(harness, admin, status="2xx")) == 3
    assert await listed(harness, admin, status="5xx") == []
    assert [e["endpoint"] for e in await listed(harness, admin, endpoint="embeddings")] == ["embeddings"]
    assert [e["key"]["id"] for e in await listed(harness, admin, until=middle)] == [one_id]
    assert len(await listed(harness, admin, since=middle.replace("+00:00", "Z"))) == 3
    assert await listed(harness, admin, key=one_id, since=middle) == []
    assert await listed(harness, admin, key="key_unknown") == []


async def test_cursor_pages_walk_every_request_once_newest_first(harness: Harness) -> None:
    admin = await harness.tenant("professional")
    _, key = await harness.key(admin)
    for n in range(7):
        await harness.chat(key, content=f"message {n}")
        if n % 3 == 0:
            harness.clock.advance(1)  # rows of one second and of several: the id breaks the ties
    everything = await listed(harness, admin)
    assert len(everything) == 7
    times = [e["created_at"] for e in everything]
    assert times == sorted(times, reverse=True)

    pages, cursor = [], None
    while True:
        answer = (await logs(harness, admin, limit=3, **({"cursor": cursor} if cursor else {}))).json()
        pages.append(answer["data"])
        cursor = answer["next_cursor"]
        assert answer["has_more"] is (cursor is not None)
        if cursor is None:
            break
    assert [len(page) for page in pages] == [3, 3, 1]
    assert [e["request_id"] for page in pages for e in page] == [e["request_id"] for e in everything]


@pytest.mark.parametrize(
    ("query", "param"),
    [
        ({"status": "3xx"}, "status"),
        ({"status": "500"}, "status"),
        ({"endpoint": "chat/completions"}, "endpoint"),
        ({"limit": 0}, "limit"),
        ({"limit": 201}, "limit"),
        ({"limit": "ten"}, "limit"),
        ({"since": "yesterday"}, "since"),
        ({"until": "2026-13-01"}, "until"),
        ({"since": "0001-01-01T00:00:00+14:00"}, "since"),
        ({"since": "1700000000"}, "since"),  # the document says date-time: no Unix seconds
        ({"since": "2026-05-18"}, "since"),
        ({"until": "2026-05-18T10:00"}, "until"),
        ({"status": ""}, "status"),
        ({"key": ""}, "key"),
        ({"until": -(10**10)}, "until"),
        ({"cursor": "not-a-cursor"}, "cursor"),
        ({"cursor": "bm90IGEgY3Vyc29y"}, "cursor"),  # base64 of text that is no position
        ({"model": "m" * 201}, "model"),
        ({"key": "k" * 41}, "key"),
        ({"key": "key_1'; --"}, "key"),
        ({"model": "gpt\x00"}, "model"),
    ],
)
async def test_a_bad_query_value_is_a_400_naming_it(
    harness: Harness, query: dict[str, Any], param: str
) -> None:
    admin = await harness.tenant()
    answer = await logs(harness, admin, **query)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["param"] == param


async def test_a_time_range_ending_before_it_starts_is_a_400(harness: Harness) -> None:
    admin = await harness.tenant()
    answer = await logs(harness, admin, since="2026-05-02T00:00:00Z", until="2026-05-01T00:00:00Z")
    assert answer.status_code == 400 and answer.json()["error"]["param"] == "until"
    assert "until must be after since" in answer.json()["error"]["message"]


async def test_a_tenant_never_sees_another_tenants_requests(harness: Harness) -> None:
    alice, bob = await harness.tenant(), await harness.tenant()
    alice_key_id, alice_key = await harness.key(alice)
    _, bob_key = await harness.key(bob)
    mine = await harness.chat(alice_key)
    theirs = await harness.chat(bob_key)
    assert [e["request_id"] for e in await listed(harness, bob)] == [theirs.headers["x-request-id"]]
    assert await listed(harness, bob, key=alice_key_id) == []
    request_id = mine.headers["x-request-id"]
    refused = await harness.client.get(f"/admin/logs/{request_id}", headers=bob.headers)
    assert refused.status_code == 404 and refused.json()["error"]["code"] == "not_found"
    shown = await harness.client.get(f"/admin/logs/{request_id}", headers=alice.headers)
    assert shown.status_code == 200 and shown.json()["key"]["id"] == alice_key_id
    # Without an admin token: 401, as every admin route.
    assert (await harness.client.get("/admin/logs")).status_code == 401


async def test_a_client_request_id_names_its_row(harness: Harness) -> None:
    admin = await harness.tenant()
    _, key = await harness.key(admin)
    answer = await harness.client.post(
        "/v1/chat/completions",
        json=chat_body(),
        headers={**key_headers(key), "X-Request-Id": "order-4711.retry-1"},
    )
    assert answer.headers["x-request-id"] == "order-4711.retry-1"
    shown = await harness.client.get("/admin/logs/order-4711.retry-1", headers=admin.headers)
    assert shown.status_code == 200 and shown.json()["model"] == MODEL


async def test_a_model_lookup_that_finds_nothing_is_logged_with_its_code(harness: Harness) -> None:
    admin = await harness.tenant()
    _, key = await harness.key(admin)
    for path in ("/v1/models/no-such-model", "/v2/models/no-such-model"):
        missing = await harness.client.get(path, headers=key_headers(key))
        assert missing.status_code == 404 and missing.json()["error"]["code"] == "model_not_found"
    v2, v1 = await listed(harness, admin, status="4xx")
    assert (v1["endpoint"], v1["error_code"], v1["model"]) == ("models", "model_not_found", "no-such-model")
    assert (v2["endpoint"], v2["error_code"]) == ("v2.models", "model_not_found")


async def test_a_request_id_the_edge_would_not_pass_on_is_a_400(harness: Harness) -> None:
    admin = await harness.tenant()
    answer = await harness.client.get("/admin/logs/bad%00id", headers=admin.headers)
    assert answer.status_code == 400 and answer.json()["error"]["param"] == "request_id"
