"""POST /v1/messages and /v1/messages/count_tokens against the sandbox mock, over HTTP: Anthropic's
JSON and event shapes, tool use, stop reasons, the key spellings, errors in Anthropic's shape, usage."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from anthropic.types import Message, RawMessageStreamEvent
from pydantic import TypeAdapter
from sqlalchemy import select

from agent_server.gateway.tables import UsageRecord
from tests.gateway.conftest import MODEL, Harness

WEATHER = {
    "name": "get_weather",
    "description": "The weather of a city",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
EVENTS: TypeAdapter[Any] = TypeAdapter(RawMessageStreamEvent)


def message_body(content: Any = "Tell me about the sea", **extra: Any) -> dict[str, Any]:
    return {"model": MODEL, "max_tokens": 200, "messages": [{"role": "user", "content": content}], **extra}


@pytest.fixture
async def key(harness: Harness) -> str:
    return (await harness.key(await harness.tenant("professional")))[1]


async def post(h: Harness, key: str, body: dict[str, Any], path: str = "/v1/messages") -> httpx.Response:
    headers = {"x-api-key": key, "anthropic-version": "2023-06-01"}
    return await h.client.post(path, json=body, headers=headers)


def events(response: httpx.Response) -> list[tuple[str, dict[str, Any]]]:
    """(event name, data) of each server-sent event, each data checked against the SDK's event types."""
    out = []
    for block in response.text.strip().split("\n\n"):
        name, data = block.split("\n", 1)
        assert name.startswith("event: ") and data.startswith("data: "), block
        payload = json.loads(data[len("data: ") :])
        assert payload["type"] == name[len("event: ") :]
        if payload["type"] not in ("ping", "error"):  # the SDK skips these before parsing
            EVENTS.validate_python(payload)
        out.append((payload["type"], payload))
    return out


async def test_a_message_in_anthropic_shape(harness: Harness, key: str) -> None:
    response = await post(harness, key, message_body())
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/json")
    message = Message.model_validate(response.json())
    assert message.type == "message" and message.role == "assistant" and message.model == MODEL
    assert message.content[0].type == "text" and "Tell me about the sea" in message.content[0].text
    assert message.stop_reason == "end_turn" and message.stop_sequence is None
    assert message.usage.input_tokens > 0 and message.usage.output_tokens > 0
    assert message.id.startswith("msg_")


async def test_the_key_also_as_bearer_and_without_a_version_header(harness: Harness, key: str) -> None:
    response = await harness.client.post(
        "/v1/messages", json=message_body(), headers={"Authorization": f"Bearer {key}"}
    )
    assert response.status_code == 200 and response.json()["type"] == "message"


async def test_a_stream_sends_anthropics_events_in_order(harness: Harness, key: str) -> None:
    plain = (await post(harness, key, message_body())).json()
    response = await post(harness, key, message_body(stream=True))
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    seen = events(response)
    names = [name for name, _ in seen]
    assert names[:3] == ["message_start", "ping", "content_block_start"]
    assert names[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    assert set(names[3:-3]) == {"content_block_delta"}
    text = "".join(data["delta"]["text"] for name, data in seen if name == "content_block_delta")
    assert text == plain["content"][0]["text"]
    delta = seen[-2][1]
    assert delta["delta"] == {"stop_reason": "end_turn", "stop_sequence": None}
    assert delta["usage"]["output_tokens"] == plain["usage"]["output_tokens"]
    assert seen[0][1]["message"]["usage"]["input_tokens"] == plain["usage"]["input_tokens"]
    assert "[DONE]" not in response.text


async def test_tool_use_then_a_tool_result_turn(harness: Harness, key: str) -> None:
    first = await post(
        harness, key, message_body("Weather in Paris?", tools=[WEATHER], tool_choice={"type": "any"})
    )
    message = first.json()
    assert message["stop_reason"] == "tool_use"
    (call,) = message["content"]
    assert (
        call["type"] == "tool_use"
        and call["name"] == "get_weather"
        and call["input"] == {"city": "sample city"}
    )
    turns = [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": message["content"]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": call["id"], "content": "18 degrees"}],
        },
    ]
    second = await post(harness, key, {**message_body(tools=[WEATHER]), "messages": turns})
    answer = second.json()
    assert answer["stop_reason"] == "end_turn"
    assert "The tool returned: 18 degrees" in answer["content"][0]["text"]


async def test_a_streamed_tool_call_arrives_as_input_json_deltas(harness: Harness, key: str) -> None:
    body = message_body(
        "Weather?", tools=[WEATHER], tool_choice={"type": "tool", "name": "get_weather"}, stream=True
    )
    seen = events(await post(harness, key, body))
    start = next(data for name, data in seen if name == "content_block_start")
    assert start["content_block"] == {
        "type": "tool_use",
        "id": start["content_block"]["id"],
        "name": "get_weather",
        "input": {},
    }
    pieces = [data["delta"]["partial_json"] for name, data in seen if name == "content_block_delta"]
    assert json.loads("".join(pieces)) == {"city": "sample city"}
    assert seen[-2][1]["delta"]["stop_reason"] == "tool_use"


async def test_stop_sequences_and_max_tokens_give_their_stop_reasons(harness: Harness, key: str) -> None:
    stopped = (await post(harness, key, message_body("the sea", stop_sequences=["model"]))).json()
    assert stopped["stop_reason"] == "stop_sequence" and stopped["stop_sequence"] == "model"
    assert "model" not in stopped["content"][0]["text"]
    cut = (await post(harness, key, message_body("the sea", max_tokens=3))).json()
    assert cut["stop_reason"] == "max_tokens" and cut["usage"]["output_tokens"] == 3
    streamed = events(
        await post(harness, key, message_body("the sea", stop_sequences=["model"], stream=True))
    )
    assert streamed[-2][1]["delta"] == {"stop_reason": "stop_sequence", "stop_sequence": "model"}


async def test_system_prompts_and_image_blocks_are_read(harness: Harness, key: str) -> None:
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
    body = message_body(
        [{"type": "text", "text": "What is this?"}, image],
        system=[{"type": "text", "text": "Be brief."}],
        model="agentgate-mock-large",  # a model with vision
    )
    text = (await post(harness, key, body)).json()["content"][0]["text"]
    assert "What is this?" in text and "(I received 1 image.)" in text


async def test_count_tokens_matches_the_input_tokens_of_the_message(harness: Harness, key: str) -> None:
    body = message_body("Count these words please", system="You are terse.")
    used = (await post(harness, key, body)).json()["usage"]["input_tokens"]
    counted = await post(
        harness, key, {k: v for k, v in body.items() if k != "max_tokens"}, "/v1/messages/count_tokens"
    )
    assert counted.status_code == 200 and counted.json() == {"input_tokens": used}


async def test_usage_rows_name_the_messages_endpoint(harness: Harness, key: str) -> None:
    await post(harness, key, message_body())
    await post(harness, key, message_body(stream=True))
    await post(
        harness,
        key,
        {"model": MODEL, "messages": [{"role": "user", "content": "x"}]},
        "/v1/messages/count_tokens",
    )
    await harness.gateway.usage.flush()
    async with harness.gateway.db.session() as session:
        rows = (await session.execute(select(UsageRecord))).scalars().all()
    by_endpoint = {(r.endpoint, r.stream): r for r in rows}
    assert (
        by_endpoint[("messages", False)].completion_tokens > 0
        and by_endpoint[("messages", False)].model == MODEL
    )
    assert (
        by_endpoint[("messages", True)].completion_tokens > 0
        and by_endpoint[("messages", True)].status == 200
    )
    assert by_endpoint[("messages.count_tokens", False)].status == 200


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}, "max_tokens"),
        (message_body(max_tokens=0), "max_tokens"),
        ({**message_body(), "messages": [{"role": "system", "content": "hi"}]}, "messages.0.role"),
        (message_body([{"text": "no type"}]), "messages.0.content"),
        (message_body(temperature=1.5), "temperature"),
        (message_body(stream="yes"), "stream"),
        (message_body(stop_sequences=["a", "b", "c", "d", "e"]), "stop_sequences"),
        (message_body(tools=[{"type": "web_search_20250305", "name": "web_search"}]), "tools.0.type"),
        (message_body([{"type": "search_result", "source": "x"}]), "messages.0.content.0.type"),
    ],
)
async def test_bad_bodies_are_400_in_anthropics_shape(
    harness: Harness, key: str, body: dict[str, Any], param: str
) -> None:
    response = await post(harness, key, body)
    assert response.status_code == 400
    error = response.json()
    assert error["type"] == "error" and error["error"]["type"] == "invalid_request_error"
    assert param in error["error"]["message"]


@pytest.mark.parametrize(
    "header",
    [
        {"anthropic-beta": "tools-2024-05-16 prompt-caching"},
        {"anthropic-beta": "a;b"},
        {"anthropic-beta": "x" * 1001},
        {"anthropic-version": "latest"},
    ],
)
async def test_a_malformed_anthropic_header_is_400_naming_it(
    harness: Harness, key: str, header: dict[str, str]
) -> None:
    headers = {"x-api-key": key, "anthropic-version": "2023-06-01", **header}
    response = await harness.client.post("/v1/messages", json=message_body(), headers=headers)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error" and next(iter(header)) in error["message"]


async def test_errors_of_keys_scopes_and_models_in_anthropics_shape(harness: Harness, key: str) -> None:
    missing = await harness.client.post("/v1/messages", json=message_body())
    assert missing.status_code == 401
    assert missing.json()["error"]["type"] == "authentication_error"
    assert missing.headers["www-authenticate"].startswith("Bearer")
    _, models_only = await harness.key(await harness.tenant("professional"), ("models",))
    denied = await post(harness, models_only, message_body())
    assert denied.status_code == 403 and denied.json()["error"]["type"] == "permission_error"
    unknown = await post(harness, key, {**message_body(), "model": "no-such-model"})
    assert unknown.status_code == 400 and "no-such-model" in unknown.json()["error"]["message"]
    not_json = await harness.client.post("/v1/messages", content=b"{", headers={"x-api-key": key})
    assert not_json.status_code == 400 and not_json.json()["error"]["type"] == "invalid_request_error"
    assert "x-ratelimit-limit" in unknown.headers
