"""The relay seam of an OpenAI-compatible upstream: bodies go up and answers come back unchanged,
but for the model id, on every endpoint, JSON and streaming."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from agent_server.foundation.clock import ManualClock
from agent_server.foundation.errors import UpstreamFailed
from agent_server.foundation.settings_llm import RouteEntry
from agent_server.llm.router import Router
from agent_server.llm.types import CHAT, COMPLETIONS, EMBEDDINGS, RESPONSES, Call, Chunk
from tests.llm.conftest import Factory, closed_port_url
from tests.llm.recording_upstream import (
    CHAT_ANSWER,
    COMPLETION_ANSWER,
    EMBEDDINGS_ANSWER,
    RESPONSE_ANSWER,
    UPSTREAM_MODEL,
    USAGE,
    RecordingUpstream,
    chunk_events,
)

PUBLIC = "gpt-test"  # routed to "upstream-model-1" by the backend's model map
MESSAGES = [
    {"role": "developer", "content": "Be brief."},
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "What is in this image?"},
            {
                "type": "image_url",
                "image_url": {"url": "data:image/png;base64,iVBORw0KGgo=", "detail": "low"},
            },
        ],
    },
]


@pytest.fixture
def recorder() -> Iterator[RecordingUpstream]:
    with RecordingUpstream() as server:
        yield server


def call(endpoint: str = CHAT, stream: bool = False, include_usage: bool = False, **body: Any) -> Call:
    fields = {"model": PUBLIC, **({"messages": MESSAGES} if endpoint == CHAT else {}), **body}
    if stream:
        fields["stream"] = True
    return Call(endpoint, PUBLIC, fields, stream, include_usage, 1_800_000_000)


def public(events: list[bytes], drop_usage: bool = False) -> bytes:
    """What the client should get: the upstream's events, model replaced, without [DONE]."""
    kept = [e for e in events if e != b"data: [DONE]\n\n" and not (drop_usage and b'"choices":[],' in e)]
    return b"".join(kept).replace(f'"model":"{UPSTREAM_MODEL}"'.encode(), f'"model":"{PUBLIC}"'.encode())


def with_public_model(answer: dict[str, Any]) -> dict[str, Any]:
    return {**copy.deepcopy(answer), "model": PUBLIC}


async def collect(batches: Any) -> list[Chunk]:
    return [chunk async for batch in batches for chunk in batch]


async def test_a_json_answer_is_the_upstreams_bytes_but_for_the_model(
    recorder: RecordingUpstream, make_backend: Factory
) -> None:
    backend = make_backend(recorder.base_url)
    extra = {
        "n": 2,
        "logprobs": True,
        "top_logprobs": 1,
        "seed": 7,
        "metadata": {"k": "v"},
        "novel": {"x": [1]},
    }
    answer = await backend.relay(call(**extra))
    assert json.loads(answer.body) == with_public_model(CHAT_ANSWER)
    ChatCompletion.model_validate_json(answer.body)
    assert (answer.usage.prompt_tokens, answer.usage.completion_tokens) == (21, 9)
    assert recorder.last(CHAT) == {**call(**extra).body, "model": "upstream-model-1"}


async def test_a_stream_is_the_upstreams_events_with_the_usage_chunk_only_when_asked(
    recorder: RecordingUpstream, make_backend: Factory
) -> None:
    backend = make_backend(recorder.base_url)
    options = {"include_usage": False, "include_obfuscation": False}
    chunks = await collect(backend.relay_stream(call(stream=True, stream_options=options)))
    upstream_events = chunk_events(CHAT, with_usage=True)
    assert b"".join(c.raw for c in chunks) == public(upstream_events, drop_usage=True)
    assert [c.usage for c in chunks if c.usage] and chunks[-1].usage.prompt_tokens == USAGE["prompt_tokens"]
    sent = recorder.last(CHAT)
    assert sent["stream_options"] == {
        "include_usage": True,
        "include_obfuscation": False,
    }  # forced, rest kept
    asked = await collect(backend.relay_stream(call(stream=True, include_usage=True)))
    assert b"".join(c.raw for c in asked) == public(upstream_events)
    for chunk in asked:
        ChatCompletionChunk.model_validate_json(chunk.raw.removeprefix(b"data: "))


async def test_without_upstream_usage_it_is_estimated_and_the_asked_usage_chunk_made(
    recorder: RecordingUpstream, make_backend: Factory
) -> None:
    recorder.send_usage = False
    backend = make_backend(recorder.base_url)
    answer = await backend.relay(call())
    assert answer.usage.prompt_tokens > 0 and answer.usage.completion_tokens == 2  # "Hi there"
    chunks = await collect(backend.relay_stream(call(stream=True, include_usage=True)))
    last = ChatCompletionChunk.model_validate_json(chunks[-1].raw.removeprefix(b"data: "))
    assert last.choices == [] and last.model == PUBLIC and last.usage is not None
    assert last.usage.completion_tokens == 2 and chunks[-1].usage == answer.usage


async def test_opening_events_are_held_until_content_and_reads_are_batched(
    recorder: RecordingUpstream, make_backend: Factory
) -> None:
    recorder.event_delay = 0.05  # one event per network read
    batches = [batch async for batch in make_backend(recorder.base_url).relay_stream(call(stream=True))]
    # The role chunk is not passed on alone: it leaves with the first content, in one batch.
    first = batches[0]
    assert [c.data["choices"][0]["delta"].get("role") for c in first if c.data] == ["assistant", None]
    assert first[1].text == "Hi" and all(batches)
    assert len(batches) >= 6  # the other events, as they arrived


@pytest.mark.parametrize(
    ("endpoint", "body", "expected"),
    [
        (COMPLETIONS, {"prompt": "Hello", "echo": False, "logprobs": 1, "suffix": None}, COMPLETION_ANSWER),
        (
            EMBEDDINGS,
            {"input": ["one", "two"], "encoding_format": "float", "dimensions": 3},
            EMBEDDINGS_ANSWER,
        ),
        (
            RESPONSES,
            {"input": [{"role": "user", "content": "Hi"}], "reasoning": {"effort": "low"}},
            RESPONSE_ANSWER,
        ),
    ],
)
async def test_the_other_endpoints_relay_their_json(
    recorder: RecordingUpstream,
    make_backend: Factory,
    endpoint: str,
    body: dict[str, Any],
    expected: dict[str, Any],
) -> None:
    answer = await make_backend(recorder.base_url).relay(call(endpoint, **body))
    assert json.loads(answer.body) == with_public_model(expected)
    assert recorder.last(endpoint) == {"model": "upstream-model-1", **body}
    assert answer.usage.total_tokens == expected["usage"]["total_tokens"]


async def test_completions_and_responses_streams_relay_their_events(
    recorder: RecordingUpstream, make_backend: Factory
) -> None:
    backend = make_backend(recorder.base_url)
    completions = await collect(backend.relay_stream(call(COMPLETIONS, stream=True, prompt="Hello")))
    assert b"".join(c.raw for c in completions) == public(chunk_events(COMPLETIONS, True), drop_usage=True)
    assert completions[-1].usage is not None and completions[-1].usage.total_tokens == 3
    responses = await collect(backend.relay_stream(call(RESPONSES, stream=True, input="Hi")))
    raw = b"".join(c.raw for c in responses)
    assert raw == public(chunk_events(RESPONSES, False))  # event: lines kept, model replaced inside
    assert raw.count(b"event: response.") == 10 and UPSTREAM_MODEL.encode() not in raw
    assert "stream_options" not in recorder.last(RESPONSES)
    assert responses[-1].usage is not None and responses[-1].usage.prompt_tokens == 12


async def test_an_upstream_without_the_endpoint_is_a_clear_502(
    recorder: RecordingUpstream, make_backend: Factory
) -> None:
    recorder.missing.add(RESPONSES)
    with pytest.raises(UpstreamFailed, match=r"does not serve /responses \(HTTP 404\)"):
        await make_backend(recorder.base_url).relay(call(RESPONSES, input="Hi"))


async def test_the_router_falls_back_on_the_relay_too(
    recorder: RecordingUpstream, make_backend: Factory
) -> None:
    down, up = make_backend(closed_port_url(), "down", retries=0), make_backend(recorder.base_url)
    route = [RouteEntry(backend="down"), RouteEntry(backend="up", priority=1)]
    router = Router({"down": down, "up": up}, None, lambda: {PUBLIC: route}, ManualClock())
    assert json.loads((await router.relay(call())).body)["id"] == CHAT_ANSWER["id"]
    streamed = await collect(router.relay_stream(call(stream=True)))
    assert b'"content":"Hi"' in b"".join(c.raw for c in streamed)
