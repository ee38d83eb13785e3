"""Through the whole gateway (live key, production mode) to a recording upstream: every request field
reaches the upstream unchanged and every answer field reaches the client unchanged, but the model."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from openai.types import Completion, CreateEmbeddingResponse
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.responses import Response
from sqlalchemy import select

from agent_server.gateway.tables import UsageRecord
from tests.gateway.conftest import Harness, HarnessFactory, key_headers
from tests.llm.conftest import config
from tests.llm.recording_upstream import (
    CHAT_ANSWER,
    COMPLETION_ANSWER,
    EMBEDDINGS_ANSWER,
    RESPONSE_ANSWER,
    UPSTREAM_MODEL,
    RecordingUpstream,
    chunk_events,
)

MODEL, EMBEDDER = "gpt-4o-mini", "text-embedding-3-small"
# What people send every day: content parts, tool and function messages, tools, JSON schema, n,
# logprobs, reasoning and audio options... and a field the gateway has never heard of.
EVERY_FIELD: dict[str, Any] = {
    "model": MODEL,
    "messages": [
        {"role": "system", "content": "You are terse."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Describe these."},
                {"type": "image_url", "image_url": {"url": "https://example.com/cat.png", "detail": "high"}},
                {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
                {"type": "file", "file": {"file_id": "file-abc", "filename": "notes.pdf"}},
            ],
            "name": "ada",
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": [{"type": "text", "text": "42"}]},
        {"role": "function", "name": "f", "content": "42"},
    ],
    "tools": [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Weather of a city",
                "parameters": {
                    "type": "object",
                    "properties": {"city": {"type": "string"}},
                    "required": ["city"],
                },
                "strict": True,
            },
        }
    ],
    "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
    "parallel_tool_calls": False,
    "response_format": {
        "type": "json_schema",
        "json_schema": {"name": "answer", "schema": {"type": "object", "properties": {}}, "strict": True},
    },
    "n": 2,
    "logprobs": True,
    "top_logprobs": 3,
    "seed": 42,
    "stop": ["\n\n", "END"],
    "user": "user-123",
    "metadata": {"team": "agents"},
    "reasoning_effort": "low",
    "modalities": ["text", "audio"],
    "audio": {"voice": "alloy", "format": "wav"},
    "prediction": {"type": "content", "content": "Hello"},
    "store": False,
    "max_completion_tokens": 300,
    "temperature": 1,
    "top_p": 0.5,
    "presence_penalty": -0.5,
    "frequency_penalty": 0,
    "logit_bias": {"50256": -100},
    "service_tier": "auto",
    "web_search_options": {"search_context_size": "low"},
    "prompt_cache_key": "k-1",
    "verbosity": "low",
    "a_field_of_tomorrow": {"deep": [1, 2.5, None, True, "ü"]},
}


@pytest.fixture
def recorder() -> Iterator[RecordingUpstream]:
    with RecordingUpstream() as server:
        yield server


@pytest.fixture
async def live(
    make_harness: HarnessFactory, recorder: RecordingUpstream
) -> AsyncIterator[tuple[Harness, str]]:
    models = {MODEL: "upstream-model-1", EMBEDDER: "upstream-embedder"}
    async with make_harness(
        mode="production", upstreams=[config(recorder.base_url, "up", models=models)]
    ) as h:
        _, key = await h.key(await h.tenant("professional"), ("chat", "embeddings", "models"))
        yield h, key


def with_model(answer: dict[str, Any], model: str = MODEL) -> dict[str, Any]:
    return {**copy.deepcopy(answer), "model": model}


def relayed(events: list[bytes], model: str = MODEL) -> bytes:
    return b"".join(events).replace(f'"model":"{UPSTREAM_MODEL}"'.encode(), f'"model":"{model}"'.encode())


async def post(h: Harness, key: str, path: str, body: dict[str, Any]) -> Any:
    response = await h.client.post(path, json=body, headers=key_headers(key))
    assert response.status_code == 200, response.text
    return response


async def test_chat_json_every_field_up_and_every_field_down(
    live: tuple[Harness, str], recorder: RecordingUpstream
) -> None:
    h, key = live
    response = await post(h, key, "/v1/chat/completions", EVERY_FIELD)
    assert recorder.last("chat/completions") == {**EVERY_FIELD, "model": "upstream-model-1"}
    assert response.json() == with_model(CHAT_ANSWER)  # two choices, logprobs, annotations, tool calls...
    completion = ChatCompletion.model_validate(response.json())
    assert completion.system_fingerprint == "fp_upstream_1" and completion.service_tier == "default"
    assert completion.choices[1].message.tool_calls and completion.choices[0].logprobs is not None


async def test_chat_stream_every_event_down_and_usage_only_when_asked(
    live: tuple[Harness, str], recorder: RecordingUpstream
) -> None:
    h, key = live
    plain = await post(h, key, "/v1/chat/completions", {**EVERY_FIELD, "stream": True})
    sent = recorder.last("chat/completions")
    assert sent == {
        **EVERY_FIELD,
        "model": "upstream-model-1",
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    events = chunk_events("chat/completions", with_usage=True)
    without_usage = [e for e in events if b'"choices":[],' not in e]
    assert plain.content == relayed(without_usage)  # the [DONE] included
    asked = {**EVERY_FIELD, "stream": True, "stream_options": {"include_usage": True}}
    with_usage = await post(h, key, "/v1/chat/completions", asked)
    assert with_usage.content == relayed(events)
    datas = [line[6:] for line in with_usage.text.split("\n") if line.startswith("data: {")]
    chunks = [ChatCompletionChunk.model_validate_json(d) for d in datas]
    assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens == 30


async def test_completions_embeddings_and_responses_relay_both_ways(
    live: tuple[Harness, str], recorder: RecordingUpstream
) -> None:
    h, key = live
    completion_body = {"model": MODEL, "prompt": ["Hello", "Hi"], "echo": True, "logprobs": 2, "best_of": 1}
    answer = await post(h, key, "/v1/completions", completion_body)
    assert answer.json() == with_model(COMPLETION_ANSWER) and Completion.model_validate(answer.json())
    assert recorder.last("completions") == {**completion_body, "model": "upstream-model-1"}
    embed_body = {"model": EMBEDDER, "input": [[1, 2, 3], [4]], "encoding_format": "float", "dimensions": 3}
    embedded = await post(h, key, "/v1/embeddings", embed_body)
    assert embedded.json() == with_model(EMBEDDINGS_ANSWER, EMBEDDER)
    CreateEmbeddingResponse.model_validate(embedded.json())
    assert recorder.last("embeddings") == {**embed_body, "model": "upstream-embedder"}
    response_body = {
        "model": MODEL,
        "input": [{"role": "user", "content": [{"type": "input_text", "text": "Hi"}]}],
        "instructions": "Be kind.",
        "text": {"format": {"type": "text"}, "verbosity": "low"},
        "include": ["reasoning.encrypted_content"],
    }
    response = await post(h, key, "/v1/responses", response_body)
    assert response.json() == with_model(RESPONSE_ANSWER) and Response.model_validate(response.json())
    streamed = await post(h, key, "/v1/responses", {**response_body, "stream": True})
    assert streamed.content == relayed(chunk_events("responses", False))  # no [DONE]: the API has none
    assert recorder.last("responses") == {**response_body, "model": "upstream-model-1", "stream": True}


async def test_usage_is_recorded_per_endpoint_from_the_upstreams_usage(
    live: tuple[Harness, str], recorder: RecordingUpstream
) -> None:
    h, key = live
    await post(h, key, "/v1/chat/completions", {**EVERY_FIELD, "stream": True})
    await post(h, key, "/v1/embeddings", {"model": EMBEDDER, "input": "x"})
    await post(h, key, "/v1/completions", {"model": MODEL, "prompt": "x"})
    await post(h, key, "/v1/responses", {"model": MODEL, "input": "Hi"})
    await h.gateway.usage.flush()
    async with h.gateway.db.session() as session:
        rows = (await session.execute(select(UsageRecord).order_by(UsageRecord.id))).scalars().all()
    seen = [(r.endpoint, r.model, r.status, r.stream, r.prompt_tokens, r.completion_tokens) for r in rows]
    assert seen == [
        ("chat", MODEL, 200, True, 21, 9),
        ("embeddings", EMBEDDER, 200, False, 3, 0),
        ("completions", MODEL, 200, False, 2, 1),
        ("responses", MODEL, 200, False, 12, 4),
    ]
