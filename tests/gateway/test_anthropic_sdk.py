"""The official ``anthropic`` SDK, with only its base URL and key set, against a real uvicorn: on the
sandbox mock, through an OpenAI-compatible upstream (which must receive the translated chat request)
and through an Anthropic-compatible upstream (which must receive the body as the SDK sent it)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import pytest
from anthropic import AsyncAnthropic

from agent_server.foundation.settings import Settings
from agent_server.gateway import provision
from tests.conftest import BASE_URL, LiveServer
from tests.gateway.anthropic_upstream import MESSAGE, UPSTREAM_MODEL, AnthropicUpstream
from tests.gateway.conftest import MODEL
from tests.llm.conftest import UPSTREAM_KEY, config
from tests.llm.recording_upstream import RecordingUpstream

WEATHER = {
    "name": "get_weather",
    "description": "The weather of a city",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
HELLO = [{"role": "user", "content": "Say hello to the SDK"}]
CLAUDE = "claude-sonnet-4"  # routed to the Anthropic-compatible upstream
GPT = "gpt-4o-mini"  # routed to the OpenAI-compatible one
# A conversation with every translated part: system blocks, an image, a document, an earlier tool
# call and its (failed) result, tools, a tool choice, stop sequences, sampling and metadata.
RICH: dict[str, Any] = {
    "max_tokens": 300,
    "system": [{"type": "text", "text": "You are terse."}, {"type": "text", "text": "Answer in English."}],
    "messages": [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is in these?"},
                {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.png"}},
                {
                    "type": "document",
                    "title": "notes.pdf",
                    "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="},
                },
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me look."},
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": [{"type": "text", "text": "18 degrees"}],
                    "is_error": True,
                },
                {"type": "text", "text": "And tomorrow?"},
            ],
        },
    ],
    "tools": [WEATHER],
    "tool_choice": {"type": "auto", "disable_parallel_tool_use": True},
    "stop_sequences": ["END"],
    "metadata": {"user_id": "user-7"},
}
# Sampling fields the API takes and this SDK sends as extra body fields; top_k has no chat equivalent.
SAMPLING = {"temperature": 0.5, "top_p": 0.9, "top_k": 40}
TRANSLATED: dict[str, Any] = {
    "model": "upstream-model-1",
    "messages": [
        {"role": "system", "content": "You are terse.\nAnswer in English."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is in these?"},
                {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}},
                {
                    "type": "file",
                    "file": {"filename": "notes.pdf", "file_data": "data:application/pdf;base64,JVBERi0="},
                },
            ],
        },
        {
            "role": "assistant",
            "content": "Let me look.",
            "tool_calls": [
                {
                    "id": "toolu_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "toolu_1", "content": "Error: 18 degrees"},
        {"role": "user", "content": "And tomorrow?"},
    ],
    "max_tokens": 300,
    "temperature": 0.5,
    "top_p": 0.9,
    "stop": ["END"],
    "tools": [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": WEATHER["description"],
                "parameters": WEATHER["input_schema"],
            },
        }
    ],
    "tool_choice": "auto",
    "parallel_tool_calls": False,
    "user": "user-7",
}


async def new_key(
    settings: Settings, plan: str = "starter", scopes: tuple[str, ...] = ("chat", "models")
) -> str:
    tenant = await provision.create_tenant(settings, f"sdk-{uuid.uuid4().hex[:8]}", plan)
    return (await provision.create_key(settings, tenant.id, "sdk", list(scopes)))[1]


def sdk(server: LiveServer, key: str) -> AsyncAnthropic:
    return AsyncAnthropic(base_url=server.url, api_key=key, max_retries=0)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path, public_base_url=BASE_URL, redis_url=None, database_url=None)


async def test_sdk_on_the_mock_messages_streams_and_tool_use(
    live_server: LiveServer, settings: Settings
) -> None:
    async with sdk(live_server, await new_key(settings)) as client:
        message = await client.messages.create(model=MODEL, max_tokens=200, messages=HELLO)  # type: ignore[arg-type]
        text = message.content[0].text  # type: ignore[union-attr]
        assert "Say hello to the SDK" in text and message.stop_reason == "end_turn"
        async with client.messages.stream(model=MODEL, max_tokens=200, messages=HELLO) as stream:  # type: ignore[arg-type]
            pieces = [piece async for piece in stream.text_stream]
            final = await stream.get_final_message()
        assert "".join(pieces) == text and final.content[0].text == text  # type: ignore[union-attr]
        assert final.usage.output_tokens == message.usage.output_tokens
        assert final.usage.input_tokens == message.usage.input_tokens
        asked = [{"role": "user", "content": "Weather in Paris?"}]
        called = await client.messages.create(
            model=MODEL,
            max_tokens=200,
            messages=asked,
            tools=[WEATHER],
            tool_choice={"type": "any"},  # type: ignore[arg-type, list-item]
        )
        tool_use = called.content[0]
        assert called.stop_reason == "tool_use" and tool_use.type == "tool_use"
        assert tool_use.input == {"city": "sample city"}
        result = {"type": "tool_result", "tool_use_id": tool_use.id, "content": "18 degrees"}
        turns = [
            *asked,
            {"role": "assistant", "content": called.content},
            {"role": "user", "content": [result]},
        ]
        answered = await client.messages.create(model=MODEL, max_tokens=200, messages=turns, tools=[WEATHER])  # type: ignore[arg-type, list-item]
        assert answered.stop_reason == "end_turn" and "18 degrees" in answered.content[0].text  # type: ignore[union-attr]
        counted = await client.messages.count_tokens(model=MODEL, messages=HELLO)  # type: ignore[arg-type]
        assert counted.input_tokens == message.usage.input_tokens


async def test_sdk_error_classes(live_server: LiveServer, settings: Settings) -> None:
    async with sdk(live_server, "sk_test_" + "A" * 40) as client:
        with pytest.raises(anthropic.AuthenticationError):
            await client.messages.create(model=MODEL, max_tokens=10, messages=HELLO)  # type: ignore[arg-type]
    async with sdk(live_server, await new_key(settings, scopes=("models",))) as client:
        with pytest.raises(anthropic.PermissionDeniedError):
            await client.messages.create(model=MODEL, max_tokens=10, messages=HELLO)  # type: ignore[arg-type]
    async with sdk(live_server, await new_key(settings)) as client:
        with pytest.raises(anthropic.BadRequestError) as bad:
            await client.messages.create(model="no-such-model", max_tokens=10, messages=HELLO)  # type: ignore[arg-type]
        assert "no-such-model" in bad.value.message


@pytest.fixture
def openai_upstream() -> Iterator[RecordingUpstream]:
    with RecordingUpstream() as server:
        yield server


@pytest.fixture
def anthropic_upstream() -> Iterator[AnthropicUpstream]:
    with AnthropicUpstream() as server:
        yield server


@pytest.fixture
def production(
    tmp_path: Path, openai_upstream: RecordingUpstream, anthropic_upstream: AnthropicUpstream
) -> Iterator[tuple[LiveServer, Settings]]:
    upstreams = [
        config(openai_upstream.base_url, "up", models={GPT: "upstream-model-1"}),
        config(anthropic_upstream.base_url, "claude", models={CLAUDE: UPSTREAM_MODEL}, dialect="anthropic"),
    ]
    settings = Settings(
        data_dir=tmp_path,
        public_base_url=BASE_URL,
        redis_url=None,
        database_url=None,
        mode="production",
        upstreams=upstreams,
    )
    with LiveServer(settings) as server:
        yield server, settings


async def test_sdk_through_an_openai_compatible_upstream(
    production: tuple[LiveServer, Settings], openai_upstream: RecordingUpstream
) -> None:
    server, settings = production
    async with sdk(server, await new_key(settings, "enterprise")) as client:
        message = await client.messages.create(model=GPT, **RICH, extra_body=SAMPLING)
        assert openai_upstream.last("chat/completions") == TRANSLATED
        assert message.model == GPT and message.content[0].text == "Hi there"  # type: ignore[union-attr]
        assert message.stop_reason == "end_turn"
        usage = message.usage  # the upstream's 21 prompt tokens, 4 of them read from its cache
        assert (usage.input_tokens, usage.cache_read_input_tokens, usage.output_tokens) == (17, 4, 9)
        async with client.messages.stream(model=GPT, **RICH, extra_body=SAMPLING) as stream:
            pieces = [piece async for piece in stream.text_stream]
            final = await stream.get_final_message()
        assert openai_upstream.last("chat/completions") == {
            **TRANSLATED,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        assert "".join(pieces) == "Hi there" and final.usage.output_tokens == 9
        assert final.usage.input_tokens == 17 and final.stop_reason == "end_turn"


async def test_sdk_through_an_anthropic_compatible_upstream_unchanged(
    production: tuple[LiveServer, Settings], anthropic_upstream: AnthropicUpstream
) -> None:
    server, settings = production
    extra = {"thinking": {"type": "enabled", "budget_tokens": 1024}, "service_tier": "auto"}
    async with sdk(server, await new_key(settings, "enterprise")) as client:
        fields = {**SAMPLING, "a_field_of_tomorrow": [1]}
        beta = {"anthropic-beta": "interleaved-thinking-2025-05-14,token-efficient-tools-2025-02-19"}
        message = await client.messages.create(
            model=CLAUDE, **RICH, extra_body=fields, extra_headers=beta, **extra
        )
        headers, body = anthropic_upstream.last
        assert body == {**RICH, **extra, **fields, "model": UPSTREAM_MODEL}
        assert headers["x-api-key"] == UPSTREAM_KEY
        # the SDK's API version and betas, passed as the client sent them
        assert headers["anthropic-version"] == client.default_headers["anthropic-version"]
        assert headers["anthropic-beta"] == beta["anthropic-beta"]
        assert "authorization" not in headers
        assert message.model == CLAUDE and message.stop_reason == "tool_use"
        assert [block.to_dict() for block in message.content] == MESSAGE["content"]
        assert message.usage.cache_read_input_tokens == 5
        async with client.messages.stream(model=CLAUDE, **RICH) as stream:
            pieces = [piece async for piece in stream.text_stream]
            final = await stream.get_final_message()
        assert anthropic_upstream.last[1] == {**RICH, "model": UPSTREAM_MODEL, "stream": True}
        assert "anthropic-beta" not in anthropic_upstream.last[0]  # only this call's own
        assert "".join(pieces) == "Checking the weather." and final.model == CLAUDE
        assert final.content[1].input == {"city": "Paris"}  # type: ignore[union-attr]
        assert final.usage.output_tokens == 9 and final.stop_reason == "tool_use"
