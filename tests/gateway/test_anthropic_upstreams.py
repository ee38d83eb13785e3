"""/v1/messages in production mode, over HTTP, against real upstreams on loopback: an Anthropic-compatible
one (bytes passed as sent but the model, usage metered, errors and fallback) and OpenAI-compatible ones
(failures mid-stream end in Anthropic's error event)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from sqlalchemy import select

from agent_server.gateway.tables import UsageRecord
from tests.gateway.anthropic_upstream import EVENTS, MESSAGE, UPSTREAM_MODEL, AnthropicUpstream, event_bytes
from tests.gateway.conftest import Harness, HarnessFactory
from tests.llm.conftest import config
from tests.llm.fake_upstream import FakeUpstream
from tests.llm.recording_upstream import RecordingUpstream

CLAUDE, GPT = "claude-sonnet-4", "gpt-4o"
HELLO = {"max_tokens": 100, "messages": [{"role": "user", "content": "Hello"}]}


@pytest.fixture
def native() -> Iterator[AnthropicUpstream]:
    with AnthropicUpstream() as server:
        yield server


@pytest.fixture
def recorder() -> Iterator[RecordingUpstream]:
    with RecordingUpstream() as server:
        yield server


@pytest.fixture
def faulty() -> Iterator[FakeUpstream]:
    with FakeUpstream() as server:
        yield server


@pytest.fixture
async def live(
    make_harness: HarnessFactory, native: AnthropicUpstream, recorder: RecordingUpstream, faulty: FakeUpstream
) -> AsyncIterator[tuple[Harness, str]]:
    upstreams = [
        config(native.base_url, "claude", models={CLAUDE: UPSTREAM_MODEL}, dialect="anthropic"),
        config(recorder.base_url, "up", models={"claude-backup": "upstream-model-1"}),
        config(faulty.base_url, "faulty", models=[GPT]),
    ]
    # Claude falls back to the OpenAI-compatible upstream: one route, two dialects.
    routes = {CLAUDE: [{"backend": "claude"}, {"backend": "up", "priority": 1}], GPT: [{"backend": "faulty"}]}
    async with make_harness(mode="production", upstreams=upstreams, routes=routes) as h:
        yield h, (await h.key(await h.tenant("enterprise")))[1]


async def post(h: Harness, key: str, body: dict[str, Any]) -> Any:
    return await h.client.post("/v1/messages", json=body, headers={"x-api-key": key})


async def rows(h: Harness) -> list[UsageRecord]:
    await h.gateway.usage.flush()
    async with h.gateway.db.session() as session:
        return list((await session.execute(select(UsageRecord).order_by(UsageRecord.id))).scalars())


async def test_native_answers_pass_as_sent_but_the_model(
    live: tuple[Harness, str], native: AnthropicUpstream
) -> None:
    h, key = live
    response = await post(h, key, {"model": CLAUDE, **HELLO})
    assert response.status_code == 200
    assert response.json() == {**MESSAGE, "model": CLAUDE}  # the field of tomorrow included
    assert native.last[1] == {"model": UPSTREAM_MODEL, **HELLO}
    streamed = await post(h, key, {"model": CLAUDE, **HELLO, "stream": True})
    expected = b"".join(event_bytes(event) for event in EVENTS)
    assert streamed.content == expected.replace(
        f'"model":"{UPSTREAM_MODEL}"'.encode(), f'"model":"{CLAUDE}"'.encode()
    )
    plain, stream = (await rows(h))[-2:]
    for row in (plain, stream):  # 11 input + 3 written to and 5 read from the prompt cache; 9 output
        assert (row.prompt_tokens, row.completion_tokens, row.backend, row.status) == (19, 9, "router", 200)
        assert row.endpoint == "messages" and row.model == CLAUDE


async def test_a_native_stream_failing_after_content_ends_with_an_error_event(
    live: tuple[Harness, str], native: AnthropicUpstream
) -> None:
    h, key = live
    native.break_after = 4  # after the first text delta
    response = await post(h, key, {"model": CLAUDE, **HELLO, "stream": True})
    assert response.status_code == 200
    *_, last = response.text.strip().split("\n\n")
    name, data = last.split("\n")
    error = json.loads(data.removeprefix("data: "))
    assert name == "event: error" and error["type"] == "error"
    assert error["error"]["type"] == "api_error" and "Overloaded" in error["error"]["message"]
    assert "Checking " in response.text
    assert (await rows(h))[-1].status == 502


async def test_a_native_upstream_failing_before_content_falls_back_to_a_translated_one(
    live: tuple[Harness, str], native: AnthropicUpstream, recorder: RecordingUpstream
) -> None:
    h, key = live
    native.break_after = 3  # message_start, content_block_start, ping: no content yet
    streamed = await post(h, key, {"model": CLAUDE, **HELLO, "stream": True})
    assert "Hi there" not in streamed.text  # the recorder streams "Hi" and " there" separately
    texts = [
        json.loads(b.split("data: ")[1])["delta"].get("text")
        for b in streamed.text.split("\n\n")
        if "text_delta" in b
    ]
    assert "".join(texts) == "Hi there" and "Checking" not in streamed.text
    native.break_after, native.status = None, 529
    answer = await post(h, key, {"model": CLAUDE, **HELLO})
    assert answer.status_code == 200 and answer.json()["content"] == [{"type": "text", "text": "Hi there"}]
    assert recorder.last("chat/completions")["messages"] == [{"role": "user", "content": "Hello"}]
    assert [row.status for row in (await rows(h))[-2:]] == [200, 200]


async def test_a_native_upstream_serves_no_chat_completions(
    live: tuple[Harness, str], native: AnthropicUpstream, recorder: RecordingUpstream
) -> None:
    h, key = live
    response = await h.client.post(
        "/v1/chat/completions",
        json={"model": CLAUDE, "messages": [{"role": "user", "content": "Hi"}]},
        headers={"Authorization": f"Bearer {key}"},
    )
    assert response.status_code == 200 and response.json()["choices"][0]["message"]["content"] == "Hi there"
    assert native.requests == []  # refused without a request; the route's next backend answered
    assert recorder.last("chat/completions")["model"] == CLAUDE
    assert (await rows(h))[-1].status == 200


async def test_a_translated_stream_failing_mid_way_ends_with_an_error_event(
    live: tuple[Harness, str], faulty: FakeUpstream
) -> None:
    h, key = live
    faulty.script.break_after, faulty.script.break_mode = 2, "error"
    response = await post(h, key, {"model": GPT, **HELLO, "stream": True})
    assert response.status_code == 200
    assert "event: content_block_delta" in response.text
    *_, last = response.text.strip().split("\n\n")
    assert last.startswith("event: error\n")
    assert "model overloaded mid-stream" in json.loads(last.split("data: ")[1])["error"]["message"]
