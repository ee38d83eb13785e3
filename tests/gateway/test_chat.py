"""POST /v1/chat/completions and GET /v1/models: the OpenAI wire format, entitlements and errors."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import yaml
from openai.types import ErrorObject, Model
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from agent_server.foundation.errors import ModelNotFound, TimedOut, UpstreamFailed
from agent_server.knowledge.pack import shipped_content_dir
from agent_server.llm.mock import MockBackend
from agent_server.llm.types import ChatRequest, Completion, Delta, Usage
from tests.gateway.conftest import MODEL, Harness, HarnessFactory, ScriptedBackend, chat_body, key_headers


def sse_data(text: str) -> list[str]:
    return [line.removeprefix("data: ") for line in text.split("\n") if line.startswith("data: ")]


def assert_envelope(body: dict, code: str, param: str | None = None) -> None:
    ErrorObject.model_validate(body["error"])
    assert set(body) == {"error"} and body["error"]["code"] == code and body["error"]["param"] == param


async def test_json_completion_has_the_openai_shape(harness: Harness) -> None:
    _, key = await harness.key(await harness.tenant())
    response = await harness.chat(key, content="What is agentgate?")
    assert response.status_code == 200 and response.headers["content-type"].startswith("application/json")
    completion = ChatCompletion.model_validate(response.json())
    assert completion.object == "chat.completion" and completion.model == MODEL
    assert completion.choices[0].message.role == "assistant"
    assert "What is agentgate?" in (completion.choices[0].message.content or "")
    assert completion.usage is not None and completion.usage.total_tokens > 0
    assert response.headers["X-RateLimit-Limit"] == "60"


async def test_stream_sends_role_deltas_finish_usage_and_done(harness: Harness) -> None:
    _, key = await harness.key(await harness.tenant())
    response = await harness.chat(key, stream=True, stream_options={"include_usage": True})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.headers["cache-control"] == "no-cache" and response.headers["x-accel-buffering"] == "no"
    assert "X-RateLimit-Remaining" in response.headers
    data = sse_data(response.text)
    assert data[-1] == "[DONE]"
    chunks = [ChatCompletionChunk.model_validate(json.loads(item)) for item in data[:-1]]
    assert len({c.id for c in chunks}) == 1 and all(c.object == "chat.completion.chunk" for c in chunks)
    assert chunks[0].choices[0].delta.role == "assistant"
    assert chunks[-2].choices[0].finish_reason == "stop" and chunks[-2].choices[0].delta.content is None
    assert chunks[-1].choices == [] and chunks[-1].usage is not None and chunks[-1].usage.total_tokens > 0
    text = "".join(c.choices[0].delta.content or "" for c in chunks[:-1] if c.choices)
    plain = (await harness.chat(key)).json()["choices"][0]["message"]["content"]
    assert text == plain


async def test_stream_without_include_usage_has_no_usage_chunk(harness: Harness) -> None:
    _, key = await harness.key(await harness.tenant())
    data = sse_data((await harness.chat(key, stream=True)).text)
    assert data[-1] == "[DONE]" and all(json.loads(item)["choices"] for item in data[:-1])


async def test_failure_mid_stream_ends_with_an_error_event_and_done(harness: Harness) -> None:
    backend = ScriptedBackend(["Hello ", "wor"], UpstreamFailed("The upstream closed the stream."))
    harness.gateway.services.sandbox_llm = backend
    _, key = await harness.key(await harness.tenant())
    response = await harness.chat(key, stream=True)
    assert response.status_code == 200
    data = sse_data(response.text)
    assert data[-1] == "[DONE]"
    assert [json.loads(item)["choices"][0]["delta"].get("content") for item in data[1:3]] == ["Hello ", "wor"]
    assert_envelope(json.loads(data[-2]), "upstream_error")
    assert backend.closed


async def test_failure_before_the_first_delta_keeps_its_http_status(harness: Harness) -> None:
    harness.gateway.services.sandbox_llm = ScriptedBackend(
        [], TimedOut("The upstream did not answer in time.")
    )
    _, key = await harness.key(await harness.tenant())
    for stream in (False, True):
        response = await harness.chat(key, stream=stream)
        assert response.status_code == 504, response.text
        assert_envelope(response.json(), "timeout")
        assert response.headers["X-RateLimit-Limit"] == "60"


async def test_router_model_not_found_is_400_with_param_model(harness: Harness) -> None:
    harness.gateway.services.sandbox_llm = ScriptedBackend([], ModelNotFound("No route.", param="model"))
    _, key = await harness.key(await harness.tenant())
    response = await harness.chat(key, stream=True)
    assert response.status_code == 400
    assert_envelope(response.json(), "model_not_found", "model")


async def test_unknown_and_not_allowed_models_are_400_model_not_found(harness: Harness) -> None:
    _, key = await harness.key(await harness.tenant("starter"))
    for model in ("no-such-model", "gpt-4o"):  # gpt-4o exists, but not on Starter
        response = await harness.client.post(
            "/v1/chat/completions", json={**chat_body(), "model": model}, headers=key_headers(key)
        )
        assert response.status_code == 400
        assert_envelope(response.json(), "model_not_found", "model")
        assert "X-RateLimit-Remaining" in response.headers


async def test_bad_bodies_are_400_in_the_gateway_envelope_never_422(harness: Harness) -> None:
    _, key = await harness.key(await harness.tenant())
    cases = [
        (b"{not json", "invalid_json", "body"),
        (b"", "invalid_json", "body"),
        (json.dumps({"model": MODEL}).encode(), "validation_error", "messages"),
        (json.dumps({**chat_body(), "temperature": 9}).encode(), "validation_error", "temperature"),
        (
            json.dumps({**chat_body(), "messages": [{"role": "robot", "content": "x"}]}).encode(),
            "validation_error",
            "messages.0.role",
        ),
    ]
    for body, code, param in cases:
        response = await harness.client.post("/v1/chat/completions", content=body, headers=key_headers(key))
        assert response.status_code == 400, response.text
        assert_envelope(response.json(), code, param)


async def test_a_bad_key_is_401_even_with_a_bad_body(harness: Harness) -> None:
    response = await harness.client.post("/v1/chat/completions", content=b"{oops")
    assert response.status_code == 401
    assert_envelope(response.json(), "invalid_api_key")
    assert response.json()["error"]["type"] == "authentication_error"
    assert response.headers["WWW-Authenticate"].startswith('Bearer realm="agentgate", error="invalid_token"')


async def test_x_api_key_header_and_quickstart_spelling_are_accepted(harness: Harness) -> None:
    _, key = await harness.key(await harness.tenant())
    response = await harness.client.get("/v1/models", headers={"X-API-Key": key})
    assert response.status_code == 200
    alias = "sk-agentgate-" + key.removeprefix("sk_test_")
    assert (await harness.client.get("/v1/models", headers=key_headers(alias))).status_code == 200
    # The same body under the other environment's prefix is not this key.
    live = "sk_live_" + key.removeprefix("sk_test_")
    assert (await harness.client.get("/v1/models", headers=key_headers(live))).status_code == 401


async def test_scopes_per_route(harness: Harness) -> None:
    admin = await harness.tenant()
    _, models_only = await harness.key(admin, ("models",))
    _, chat_only = await harness.key(admin, ("chat",))
    denied = await harness.chat(models_only)
    assert denied.status_code == 403
    assert_envelope(denied.json(), "insufficient_scope")
    assert denied.json()["error"]["type"] == "permission_error"
    assert 'error="insufficient_scope", scope="chat"' in denied.headers["WWW-Authenticate"]
    assert denied.headers["X-RateLimit-Remaining"] is not None
    assert (await harness.client.get("/v1/models", headers=key_headers(chat_only))).status_code == 403
    assert (await harness.chat(chat_only)).status_code == 200


async def test_models_lists_the_plan_models_in_the_openai_shape(harness: Harness) -> None:
    _, key = await harness.key(await harness.tenant("starter"))
    body = (await harness.client.get("/v1/models", headers=key_headers(key))).json()
    assert body["object"] == "list"
    assert [Model.model_validate(m).id for m in body["data"]] == ["agentgate-mock-small", "gpt-4o-mini"]
    one = await harness.client.get(f"/v1/models/{MODEL}", headers=key_headers(key))
    assert one.status_code == 200 and one.json()["id"] == MODEL
    missing = await harness.client.get("/v1/models/gpt-4o", headers=key_headers(key))
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "model_not_found"


async def test_a_plan_without_streaming_gets_403_plan_limit_exceeded(
    make_harness: HarnessFactory, tmp_path: Path
) -> None:
    shipped = yaml.safe_load((shipped_content_dir() / "plans.yaml").read_text())
    for plan in shipped["plans"]:
        if plan["id"] == "starter":
            plan["features"] = []
    content = tmp_path / "content"
    content.mkdir()
    (content / "plans.yaml").write_text(yaml.safe_dump(shipped))
    async with make_harness(content_dir=content) as h:
        _, key = await h.key(await h.tenant("starter"))
        response = await h.chat(key, stream=True)
        assert response.status_code == 403
        assert_envelope(response.json(), "plan_limit_exceeded", "streaming")
        assert (await h.chat(key)).status_code == 200


async def test_sandbox_keys_use_the_mock_and_live_keys_the_router(make_harness: HarnessFactory) -> None:
    router = ScriptedBackend(["from ", "the ", "router"])
    async with make_harness(mode="production") as h:
        h.gateway.services.llm = router
        _, key = await h.key(await h.tenant())
        assert key.startswith("sk_live_")
        assert (await h.chat(key)).json()["choices"][0]["message"]["content"] == "from the router"
        assert router.calls == 1
    async with make_harness() as h:
        h.gateway.services.llm = router
        _, key = await h.key(await h.tenant())
        assert key.startswith("sk_test_") and isinstance(h.gateway.services.sandbox_llm, MockBackend)
        assert "sandbox model" in (await h.chat(key)).json()["choices"][0]["message"]["content"]
        assert router.calls == 1


class ToolCallingBackend:
    """A backend whose model calls a tool, as the router passes an upstream's tool calls through."""

    name = "tools"
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city":"Berlin"}'},
    }

    async def complete(self, request: ChatRequest) -> Completion:
        return Completion("", "tool_calls", Usage(5, 7), request.model, tool_calls=[self.call])

    async def stream(self, request: ChatRequest) -> AsyncIterator[Delta]:
        first = {
            "index": 0,
            "id": "call_1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": ""},
        }
        yield Delta("", tool_calls=[first])
        yield Delta("", tool_calls=[{"index": 0, "function": {"arguments": '{"city":"Berlin"}'}}])
        yield Delta("", "tool_calls", Usage(5, 7))


async def test_tool_calls_pass_through_json_and_stream(harness: Harness) -> None:
    harness.gateway.services.sandbox_llm = ToolCallingBackend()
    _, key = await harness.key(await harness.tenant())
    completion = ChatCompletion.model_validate((await harness.chat(key)).json())
    message = completion.choices[0].message
    assert completion.choices[0].finish_reason == "tool_calls" and message.content is None
    assert message.tool_calls and message.tool_calls[0].function.arguments == '{"city":"Berlin"}'
    data = sse_data((await harness.chat(key, stream=True)).text)
    chunks = [ChatCompletionChunk.model_validate(json.loads(item)) for item in data[:-1]]
    fragments = [c.choices[0].delta.tool_calls for c in chunks if c.choices and c.choices[0].delta.tool_calls]
    assert fragments[0][0].function.name == "get_weather"
    assert "".join(f[0].function.arguments or "" for f in fragments) == '{"city":"Berlin"}'
    assert chunks[-1].choices[0].finish_reason == "tool_calls"
