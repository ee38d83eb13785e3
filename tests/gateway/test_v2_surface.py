"""The /v2 surface over HTTP: chat (JSON and SSE) and models through the /v1 seams, the key in either
header (spec 5.1), and what differs: models the key may call, the usage chunk in every stream, a
request id in every error, its own usage endpoint names."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from openai import AsyncOpenAI
from sqlalchemy import select

from agent_server.foundation.settings import Settings
from agent_server.gateway import provision
from agent_server.gateway.tables import UsageRecord
from tests.conftest import BASE_URL, LiveServer
from tests.gateway.conftest import MODEL, Harness, HarnessFactory, chat_body, key_headers
from tests.llm.conftest import config
from tests.llm.fake_upstream import FakeUpstream


@pytest.fixture
async def key(harness: Harness) -> str:
    return (await harness.key(await harness.tenant("professional")))[1]


def data_events(text: str) -> list[Any]:
    return [
        json.loads(line[6:]) if line != "data: [DONE]" else "[DONE]" for line in text.split("\n\n") if line
    ]


async def rows(h: Harness) -> list[UsageRecord]:
    await h.gateway.usage.flush()
    async with h.gateway.db.session() as session:
        return list((await session.execute(select(UsageRecord).order_by(UsageRecord.id))).scalars())


async def test_chat_json_and_a_stream_that_always_ends_with_the_usage(harness: Harness, key: str) -> None:
    h = harness
    answer = await h.client.post("/v2/chat/completions", json=chat_body(), headers=key_headers(key))
    assert answer.status_code == 200 and answer.json()["object"] == "chat.completion"
    assert answer.headers["x-request-id"]
    v1 = await h.client.post("/v1/chat/completions", json=chat_body(stream=True), headers=key_headers(key))
    v2 = await h.client.post("/v2/chat/completions", json=chat_body(stream=True), headers=key_headers(key))
    assert v2.headers["content-type"].startswith("text/event-stream")
    *chunks, usage, done = data_events(v2.text)
    assert done == "[DONE]" and usage["choices"] == [] and usage["usage"] == answer.json()["usage"]
    assert all(not chunk.get("usage") for chunk in data_events(v1.text)[:-1])  # /v1 only when asked
    assert (
        "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
        == answer.json()["choices"][0]["message"]["content"]
    )
    assert [(r.endpoint, r.stream, r.status) for r in (await rows(h))[-3:]] == [
        ("v2.chat", False, 200),
        ("chat", True, 200),
        ("v2.chat", True, 200),
    ]


async def test_either_key_header_and_errors_name_the_request(harness: Harness, key: str) -> None:
    h = harness
    # Spec 5.1: the key as Authorization: Bearer or as X-API-Key, on every gateway route.
    by_header = await h.client.post("/v2/chat/completions", json=chat_body(), headers={"X-API-Key": key})
    assert by_header.status_code == 200 and by_header.json()["object"] == "chat.completion"
    listed = await h.client.get("/v2/models", headers={"X-API-Key": key})
    assert listed.status_code == 200 and listed.json()["data"]
    refused = await h.client.post("/v2/chat/completions", json=chat_body())
    error = refused.json()["error"]
    assert refused.status_code == 401 and error["code"] == "invalid_api_key"
    assert "Authorization: Bearer" in error["message"] and "X-API-Key" in error["message"]
    assert error["request_id"] == refused.headers["x-request-id"]
    named = await h.client.post(
        "/v2/chat/completions",
        json=chat_body(n="two"),
        headers={**key_headers(key), "X-Request-Id": "trace-42"},
    )
    assert named.status_code == 400 and named.json()["error"]["request_id"] == "trace-42"
    assert named.json()["error"]["param"] == "n" and "x-ratelimit-limit" in named.headers
    missing = await h.client.get("/v2/models/no-such-model", headers=key_headers(key))
    assert (
        missing.status_code == 404
        and missing.json()["error"]["request_id"] == missing.headers["x-request-id"]
    )


async def test_the_model_must_be_one_the_key_may_call(harness: Harness, key: str) -> None:
    h = harness
    # The plan grants "gpt-4o*", but no such model exists: the sandbox refuses it on /v1 and /v2.
    body = {**chat_body(), "model": "gpt-4o-of-my-imagination"}
    v1 = await h.client.post("/v1/chat/completions", json=body, headers=key_headers(key))
    assert v1.status_code == 400 and v1.json()["error"]["code"] == "model_not_found"
    refused = await h.client.post("/v2/chat/completions", json=body, headers=key_headers(key))
    assert refused.status_code == 400
    assert (
        refused.json()["error"]["code"] == "model_not_found" and refused.json()["error"]["param"] == "model"
    )
    row = (await rows(h))[-1]
    assert (row.endpoint, row.model, row.status) == ("v2.chat", "gpt-4o-of-my-imagination", 400)


async def test_models_list_and_retrieve_as_on_v1(harness: Harness, key: str) -> None:
    h = harness
    v1 = await h.client.get("/v1/models", headers=key_headers(key))
    v2 = await h.client.get("/v2/models", headers=key_headers(key))
    assert v2.status_code == 200 and v2.json() == v1.json() and MODEL in [m["id"] for m in v2.json()["data"]]
    one = await h.client.get(f"/v2/models/{MODEL}", headers=key_headers(key))
    assert one.status_code == 200 and one.json()["id"] == MODEL
    assert [r.endpoint for r in (await rows(h))[-2:]] == ["v2.models", "v2.models"]


async def test_openapi_documents_v2_with_either_key_header(harness: Harness) -> None:
    doc = (await harness.client.get("/openapi.json")).json()
    for path, method in (
        ("/v2/chat/completions", "post"),
        ("/v2/models", "get"),
        ("/v2/models/{model_id}", "get"),
    ):
        operation = doc["paths"][path][method]
        assert operation["security"] == [{"apiKeyBearer": []}, {"apiKeyHeader": []}] and operation["summary"]


@pytest.fixture
def faulty() -> Iterator[FakeUpstream]:
    with FakeUpstream() as server:
        yield server


@pytest.fixture
async def live(make_harness: HarnessFactory, faulty: FakeUpstream) -> AsyncIterator[tuple[Harness, str]]:
    upstreams = [config(faulty.base_url, "faulty", models=["gpt-4o-mini"])]
    async with make_harness(mode="production", upstreams=upstreams) as h:
        yield h, (await h.key(await h.tenant("professional")))[1]


async def test_a_stream_failing_mid_way_names_the_request_in_its_error(
    live: tuple[Harness, str], faulty: FakeUpstream
) -> None:
    h, key = live
    faulty.script.break_after, faulty.script.break_mode = 2, "error"
    body = {**chat_body(stream=True), "model": "gpt-4o-mini"}
    response = await h.client.post("/v2/chat/completions", json=body, headers=key_headers(key))
    *_, error, done = data_events(response.text)
    assert done == "[DONE]" and "model overloaded mid-stream" in error["error"]["message"]
    assert error["error"]["request_id"] == response.headers["x-request-id"]


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path, public_base_url=BASE_URL, redis_url=None, database_url=None)


async def test_the_openai_sdk_on_v2(live_server: LiveServer, settings: Settings) -> None:
    tenant = await provision.create_tenant(settings, f"v2-{uuid.uuid4().hex[:8]}", "starter")
    _, key = await provision.create_key(settings, tenant.id, "sdk", ["chat", "models"])
    async with AsyncOpenAI(base_url=f"{live_server.url}/v2", api_key=key) as client:
        messages = [{"role": "user", "content": "Hello v2"}]
        stream = await client.chat.completions.create(model=MODEL, messages=messages, stream=True)  # type: ignore[arg-type]
        chunks = [chunk async for chunk in stream]
        assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens > 0
        assert [m.id async for m in client.models.list()] == [MODEL, "gpt-4o-mini"]
