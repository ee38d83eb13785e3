"""The official ``openai`` SDK, only its base URL changed, against the sandbox mock on a real uvicorn:
what agents are developed against answers deterministically on every endpoint, streaming and not."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from openai import AsyncOpenAI

from agent_server.foundation.settings import Settings
from agent_server.gateway import provision
from tests.conftest import BASE_URL, LiveServer

MODEL, EMBEDDER = "agentgate-mock-small", "text-embedding-3-small"
VISION = "agentgate-mock-large"  # images need a model with the vision capability
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "days": {"type": "integer", "minimum": 1, "maximum": 7},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                "alerts": {"type": "boolean"},
                "note": {"type": "string"},
            },
            "required": ["city", "days", "unit", "alerts"],
        },
    },
}
PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "age": {"type": "integer", "minimum": 0},
        "tags": {"type": "array", "items": {"type": "string"}},
        "address": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
    "required": ["name", "age", "tags", "address"],
    "additionalProperties": False,
}


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path, public_base_url=BASE_URL, redis_url=None, database_url=None)


@pytest.fixture
async def client(live_server: LiveServer, settings: Settings) -> AsyncIterator[AsyncOpenAI]:
    tenant = await provision.create_tenant(settings, f"mock-{uuid.uuid4().hex[:8]}", "professional")
    key = (await provision.create_key(settings, tenant.id, "sdk", ["chat", "embeddings", "models"]))[1]
    async with AsyncOpenAI(base_url=f"{live_server.url}/v1", api_key=key, max_retries=0) as sdk:
        yield sdk


async def test_content_parts_are_read_and_images_acknowledged(client: AsyncOpenAI) -> None:
    messages: Any = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is on"},
                {"type": "text", "text": "this picture?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
            ],
        }
    ]
    completion = await client.chat.completions.create(model=VISION, messages=messages)
    text = completion.choices[0].message.content or ""
    assert "What is on this picture?" in text and "(I received 1 image.)" in text
    again = await client.chat.completions.create(model=VISION, messages=messages)
    assert again.choices[0].message.content == text  # deterministic
    stream = await client.chat.completions.create(model=VISION, messages=messages, stream=True)
    assert "".join([c.choices[0].delta.content or "" async for c in stream if c.choices]) == text


async def test_tools_give_a_call_whose_arguments_satisfy_the_schema(client: AsyncOpenAI) -> None:
    messages: Any = [{"role": "user", "content": "Weather in Paris?"}]
    completion = await client.chat.completions.create(model=MODEL, messages=messages, tools=[WEATHER])  # type: ignore[list-item]
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    call = (choice.message.tool_calls or [])[0]
    arguments = json.loads(call.function.arguments)  # type: ignore[union-attr]
    assert call.function.name == "get_weather"  # type: ignore[union-attr]
    assert arguments == {"city": "sample city", "days": 1, "unit": "celsius", "alerts": True}
    stream = await client.chat.completions.create(
        model=MODEL, messages=messages, tools=[WEATHER], stream=True
    )  # type: ignore[list-item]
    chunks = [chunk async for chunk in stream]
    fragments = [tc for c in chunks if c.choices for tc in c.choices[0].delta.tool_calls or []]
    assert (
        fragments[0].id == call.id and fragments[0].function and fragments[0].function.name == "get_weather"
    )
    assert json.loads("".join(f.function.arguments or "" for f in fragments if f.function)) == arguments
    assert chunks[-1].choices[0].finish_reason == "tool_calls"
    # After the tool answered, the mock replies in text (an agent's loop ends); "none" never calls.
    answered = [
        *messages,
        choice.message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": "18 degrees"},
    ]
    reply = await client.chat.completions.create(model=MODEL, messages=answered, tools=[WEATHER])  # type: ignore[list-item]
    assert reply.choices[0].finish_reason == "stop" and "18 degrees" in (
        reply.choices[0].message.content or ""
    )
    none = await client.chat.completions.create(
        model=MODEL, messages=messages, tools=[WEATHER], tool_choice="none"
    )  # type: ignore[list-item]
    assert none.choices[0].message.tool_calls is None


async def test_n_choices_json_schema_and_logprobs(client: AsyncOpenAI) -> None:
    messages: Any = [{"role": "user", "content": "Tell me about Ada"}]
    two = await client.chat.completions.create(model=MODEL, messages=messages, n=2)
    assert [c.index for c in two.choices] == [0, 1]
    assert two.choices[0].message.content != two.choices[1].message.content
    stream = await client.chat.completions.create(model=MODEL, messages=messages, n=2, stream=True)
    texts = ["", ""]
    async for chunk in stream:
        for choice in chunk.choices:
            texts[choice.index] += choice.delta.content or ""
    assert texts == [c.message.content for c in two.choices]
    schema: Any = {"type": "json_schema", "json_schema": {"name": "person", "schema": PERSON, "strict": True}}
    person = await client.chat.completions.create(model=MODEL, messages=messages, response_format=schema)
    assert json.loads(person.choices[0].message.content or "") == {
        "name": "sample name",
        "age": 0,
        "tags": [],
        "address": {"city": "sample city"},
    }
    streamed = await client.chat.completions.create(
        model=MODEL, messages=messages, response_format=schema, stream=True
    )
    text = "".join([c.choices[0].delta.content or "" async for c in streamed if c.choices])
    assert text == person.choices[0].message.content
    mode: Any = {"type": "json_object"}
    plain_json = await client.chat.completions.create(model=MODEL, messages=messages, response_format=mode)
    assert "Tell me about Ada" in json.loads(plain_json.choices[0].message.content or "")["answer"]
    scored = await client.chat.completions.create(
        model=MODEL, messages=messages, logprobs=True, top_logprobs=2
    )
    content = scored.choices[0].logprobs.content or []  # type: ignore[union-attr]
    assert "".join(t.token for t in content) == scored.choices[0].message.content
    assert all(len(t.top_logprobs) == 2 and t.logprob <= 0 for t in content)
    again = await client.chat.completions.create(
        model=MODEL, messages=messages, logprobs=True, top_logprobs=2
    )
    assert again.choices[0].logprobs == scored.choices[0].logprobs
    pieces = await client.chat.completions.create(
        model=MODEL, messages=messages, logprobs=True, top_logprobs=2, stream=True
    )
    tokens = [
        t
        async for c in pieces
        if c.choices and c.choices[0].logprobs
        for t in c.choices[0].logprobs.content or []
    ]
    assert tokens == content
    limited = await client.chat.completions.create(model=MODEL, messages=messages, max_completion_tokens=3)
    assert (
        limited.choices[0].finish_reason == "length"
        and limited.usage
        and limited.usage.completion_tokens == 3
    )


async def test_embeddings_are_deterministic_unit_vectors(client: AsyncOpenAI) -> None:
    default = await client.embeddings.create(model=EMBEDDER, input=["hello", "world"])  # the SDK asks base64
    assert [len(d.embedding) for d in default.data] == [1536, 1536]
    assert abs(sum(v * v for v in default.data[0].embedding) - 1) < 1e-4
    small = await client.embeddings.create(
        model=EMBEDDER, input="hello", dimensions=8, encoding_format="float"
    )
    assert len(small.data[0].embedding) == 8 and abs(sum(v * v for v in small.data[0].embedding) - 1) < 1e-9
    again = await client.embeddings.create(
        model=EMBEDDER, input="hello", dimensions=8, encoding_format="float"
    )
    assert again.data[0].embedding == small.data[0].embedding and small.usage.prompt_tokens == 1


async def test_legacy_completions_json_and_stream(client: AsyncOpenAI) -> None:
    completion = await client.completions.create(model=MODEL, prompt="Once upon a time", max_tokens=50)
    text = completion.choices[0].text
    assert "sandbox model" in text and completion.choices[0].finish_reason == "stop"
    stream = await client.completions.create(
        model=MODEL,
        prompt="Once upon a time",
        max_tokens=50,
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = [chunk async for chunk in stream]
    assert "".join(c.choices[0].text for c in chunks if c.choices) == text
    assert chunks[-1].usage is not None and chunks[-1].usage == completion.usage
    short = await client.completions.create(model=MODEL, prompt="Once upon a time")  # OpenAI's default: 16
    assert short.choices[0].finish_reason == "length" and short.usage and short.usage.completion_tokens == 16


async def test_responses_json_and_typed_events(client: AsyncOpenAI) -> None:
    response = await client.responses.create(
        model=MODEL, input="Say hi to the Responses API", instructions="Be brief."
    )
    assert response.status == "completed" and "Say hi to the Responses API" in response.output_text
    assert response.usage is not None and response.usage.output_tokens > 0
    stream = await client.responses.create(model=MODEL, input="Say hi to the Responses API", stream=True)
    events = [event async for event in stream]
    kinds = [event.type for event in events]
    assert kinds[:2] == ["response.created", "response.in_progress"] and kinds[-1] == "response.completed"
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert "".join(e.delta for e in events if e.type == "response.output_text.delta") == response.output_text
    tools: Any = [
        {"type": "function", "name": "get_weather", "parameters": WEATHER["function"]["parameters"]}
    ]  # type: ignore[index]
    called = await client.responses.create(model=MODEL, input="Weather?", tools=tools)
    item = called.output[0]
    assert item.type == "function_call" and json.loads(item.arguments)["unit"] == "celsius"
    async with client.responses.stream(model=MODEL, input="Weather?", tools=tools) as helper:
        final = await helper.get_final_response()
    assert final.output[0].type == "function_call" and final.output[0].arguments == item.arguments
