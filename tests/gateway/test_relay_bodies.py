"""What the relayed endpoints refuse (what the gateway needs, the types OpenAI itself rejects) and
what they let through, the scopes and plan features they need, and how their failures look."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from agent_server.foundation.errors import UpstreamFailed
from agent_server.knowledge.pack import shipped_content_dir
from agent_server.llm.mock_responses import response_events
from tests.gateway.conftest import MODEL, Harness, HarnessFactory, ScriptedBackend, key_headers
from tests.gateway.test_chat import assert_envelope, sse_data

CHAT = {"model": MODEL, "messages": [{"role": "user", "content": "Hi"}]}


async def send(h: Harness, key: str, path: str, body: Any) -> Any:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return await h.client.post(path, content=content, headers=key_headers(key))


@pytest.mark.parametrize(
    ("path", "body", "param"),
    [
        ("/v1/chat/completions", {**CHAT, "stream": "yes"}, "stream"),
        ("/v1/chat/completions", {**CHAT, "n": 0}, "n"),
        ("/v1/chat/completions", {**CHAT, "n": 129}, "n"),
        ("/v1/chat/completions", {**CHAT, "n": 1.5}, "n"),
        ("/v1/chat/completions", {**CHAT, "messages": []}, "messages"),
        ("/v1/chat/completions", {**CHAT, "messages": ["Hi"]}, "messages.0"),
        ("/v1/chat/completions", {**CHAT, "messages": [{"content": "Hi"}]}, "messages.0.role"),
        (
            "/v1/chat/completions",
            {**CHAT, "messages": [{"role": "user", "content": 5}]},
            "messages.0.content",
        ),
        ("/v1/chat/completions", {**CHAT, "messages": [{"role": "user", "content": [{"text": "x"}]}]}, None),
        ("/v1/chat/completions", {**CHAT, "logprobs": "true"}, "logprobs"),
        ("/v1/chat/completions", {**CHAT, "top_logprobs": 21}, "top_logprobs"),
        ("/v1/chat/completions", {**CHAT, "stop": ["a", "b", "c", "d", "e"]}, "stop"),
        (
            "/v1/chat/completions",
            {**CHAT, "stream_options": {"include_usage": "yes"}},
            "stream_options.include_usage",
        ),
        ("/v1/chat/completions", {**CHAT, "response_format": {"type": "xml"}}, "response_format.type"),
        ("/v1/chat/completions", {**CHAT, "model": ""}, "model"),
        ("/v1/completions", {"model": MODEL}, "prompt"),
        ("/v1/responses", {"model": MODEL, "input": 5}, "input"),
        ("/v1/chat/completions", b"[]", "body"),
    ],
)
async def test_what_openai_rejects_is_a_400_naming_the_field(
    harness: Harness, path: str, body: Any, param: str | None
) -> None:
    _, key = await harness.key(await harness.tenant())
    response = await send(harness, key, path, body)
    assert response.status_code == 400, response.text
    assert response.json()["error"]["code"] == "validation_error"
    if param is not None:
        assert response.json()["error"]["param"] == param
    assert "X-RateLimit-Remaining" in response.headers


async def test_unknown_fields_and_every_content_part_are_accepted(harness: Harness) -> None:
    _, key = await harness.key(await harness.tenant())
    parts = [
        {"type": "text", "text": "Read"},
        {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
        {"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBER", "filename": "a.pdf"}},
        {"type": "a_part_of_tomorrow", "payload": 1},
    ]
    body = {**CHAT, "messages": [{"role": "user", "content": parts}], "brand_new_option": {"x": True}}
    response = await send(harness, key, "/v1/chat/completions", body)
    assert response.status_code == 200, response.text
    assert "(I received 1 audio clip and 1 file.)" in response.json()["choices"][0]["message"]["content"]


async def test_embeddings_need_the_scope_and_the_plan_feature(harness: Harness) -> None:
    starter = await harness.tenant("starter")
    _, chat_key = await harness.key(starter, ("chat",))
    denied = await send(
        harness, chat_key, "/v1/embeddings", {"model": "text-embedding-3-small", "input": "x"}
    )
    assert denied.status_code == 403
    assert_envelope(denied.json(), "insufficient_scope")
    assert 'scope="embeddings"' in denied.headers["WWW-Authenticate"]
    _, key = await harness.key(await harness.tenant("professional"), ("chat", "embeddings"))
    ok = await send(harness, key, "/v1/embeddings", {"model": "text-embedding-3-small", "input": "x"})
    assert ok.status_code == 200 and ok.json()["data"][0]["object"] == "embedding"


async def test_embeddings_without_the_plan_feature_are_403(
    make_harness: HarnessFactory, tmp_path: Path
) -> None:
    shipped = yaml.safe_load((shipped_content_dir() / "plans.yaml").read_text())
    for plan in shipped["plans"]:
        if plan["id"] == "professional":
            plan["features"] = [f for f in plan["features"] if f != "embeddings"]
    content = tmp_path / "content"
    content.mkdir()
    (content / "plans.yaml").write_text(yaml.safe_dump(shipped))
    async with make_harness(content_dir=content) as h:
        _, key = await h.key(await h.tenant("professional"), ("chat", "embeddings"))
        refused = await send(h, key, "/v1/embeddings", {"model": "text-embedding-3-small", "input": "x"})
        assert refused.status_code == 403
        assert_envelope(refused.json(), "plan_limit_exceeded", "embeddings")


async def test_every_relayed_endpoint_checks_the_model_and_streaming(harness: Harness) -> None:
    _, key = await harness.key(await harness.tenant("starter"))
    for path, body in [
        ("/v1/completions", {"model": "gpt-4o", "prompt": "x"}),
        ("/v1/responses", {"model": "gpt-4o", "input": "x"}),
    ]:
        response = await send(harness, key, path, body)
        assert response.status_code == 400
        assert_envelope(response.json(), "model_not_found", "model")


async def test_the_usage_chunk_goes_to_the_client_only_when_asked(harness: Harness) -> None:
    _, key = await harness.key(await harness.tenant())
    for path, body in [("/v1/chat/completions", CHAT), ("/v1/completions", {"model": MODEL, "prompt": "x"})]:
        plain = sse_data((await send(harness, key, path, {**body, "stream": True})).text)
        assert plain[-1] == "[DONE]" and all(json.loads(item)["choices"] for item in plain[:-1])
        asked = {**body, "stream": True, "stream_options": {"include_usage": True}}
        with_usage = sse_data((await send(harness, key, path, asked)).text)
        assert (
            json.loads(with_usage[-2])["choices"] == []
            and json.loads(with_usage[-2])["usage"]["total_tokens"]
        )


async def test_a_typed_backend_still_serves_chat_and_says_what_it_cannot(harness: Harness) -> None:
    harness.gateway.services.sandbox_llm = ScriptedBackend(["only ", "chat"])
    _, key = await harness.key(await harness.tenant())
    chat = await send(harness, key, "/v1/chat/completions", CHAT)
    assert chat.json()["choices"][0]["message"]["content"] == "only chat"
    other = await send(harness, key, "/v1/responses", {"model": MODEL, "input": "x"})
    assert other.status_code == 502 and "chat completions only" in other.json()["error"]["message"]


async def test_a_responses_stream_that_breaks_ends_with_its_error_event(harness: Harness) -> None:
    class Breaking:
        name = "breaking"

        async def relay(self, call: Any) -> Any:
            raise AssertionError("not called")

        async def relay_stream(self, call: Any) -> Any:
            events = response_events(call)
            yield [events[0]]
            yield [events[4]]
            raise UpstreamFailed("The upstream closed the stream.")

    harness.gateway.services.sandbox_llm = Breaking()
    _, key = await harness.key(await harness.tenant())
    response = await send(harness, key, "/v1/responses", {"model": MODEL, "input": "Hi", "stream": True})
    assert response.status_code == 200
    blocks = [b for b in response.text.split("\n\n") if b]
    assert blocks[-1].startswith("event: error\ndata: ")
    error = json.loads(blocks[-1].split("data: ", 1)[1])
    assert error["type"] == "error" and error["code"] == "upstream_error"
    assert error["sequence_number"] == json.loads(blocks[-2].split("data: ", 1)[1])["sequence_number"] + 1
    assert "[DONE]" not in response.text
