"""The sandbox answers as a real model and the real API would, seen through the official SDKs: text
cut by a token limit is the start of the whole answer (the Responses API keeps it in an incomplete
response and names it in its events), images need a model with vision, a model that exists nowhere
is refused on every plan, /v1/models lists only what the key's scopes reach, and Messages answers
name the request as Anthropic does (``request-id``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anthropic
import httpx2
import openai
import pytest
from anthropic import AsyncAnthropic

from tests.conftest import BASE_URL
from tests.gateway.conftest import MODEL, Harness
from tests.gateway.test_keys_settings import create, sdk

VISION_MODEL = "agentgate-mock-large"  # capabilities [chat, tools, vision]; MODEL has no vision
EMBEDDER = "text-embedding-3-small"
IMAGE = "data:image/png;base64,iVBORw0KGgo="
ASK = "Tell me a long story about the sea and the ships that sail on it"


async def key_of(h: Harness, plan: str = "professional", scopes: tuple[str, ...] = ("chat", "models")) -> str:
    response = await create(h, await h.tenant(plan), scopes=list(scopes))
    assert response.status_code == 201, response.text
    return response.json()["key"]


@asynccontextmanager
async def messages_sdk(h: Harness, key: str) -> AsyncIterator[AsyncAnthropic]:
    transport = httpx2.AsyncClient(
        transport=httpx2.ASGITransport(h.app), base_url=BASE_URL
    )  # the SDK's httpx
    async with AsyncAnthropic(base_url=BASE_URL, api_key=key, max_retries=0, http_client=transport) as c:
        yield c


async def test_text_cut_by_a_token_limit_is_the_start_of_the_whole_answer(harness: Harness) -> None:
    messages: Any = [{"role": "user", "content": ASK}]
    async with sdk(harness, await key_of(harness)) as client:
        whole = (await client.chat.completions.create(model=MODEL, messages=messages)).choices[0]
        cut = (await client.chat.completions.create(model=MODEL, messages=messages, max_tokens=5)).choices[0]
        text, start = whole.message.content or "", cut.message.content or ""
        assert cut.finish_reason == "length" and start and text.startswith(start) and start != text
        stream = await client.chat.completions.create(
            model=MODEL, messages=messages, max_tokens=5, stream=True
        )
        assert "".join([c.choices[0].delta.content or "" async for c in stream if c.choices]) == start
        legacy = await client.completions.create(model=MODEL, prompt=ASK, max_tokens=200)
        legacy_cut = await client.completions.create(model=MODEL, prompt=ASK, max_tokens=6)
        assert legacy_cut.choices[0].finish_reason == "length"
        assert legacy.choices[0].text.startswith(legacy_cut.choices[0].text)


async def test_a_response_cut_by_max_output_tokens_keeps_its_text(harness: Harness) -> None:
    async with sdk(harness, await key_of(harness)) as client:
        whole = await client.responses.create(model=MODEL, input=ASK)
        cut = await client.responses.create(model=MODEL, input=ASK, max_output_tokens=5)
        assert cut.status == "incomplete" and cut.incomplete_details is not None
        assert cut.incomplete_details.reason == "max_output_tokens"
        assert cut.output_text and whole.output_text.startswith(cut.output_text)
        assert cut.output[0].status == "incomplete"  # type: ignore[union-attr]
        stream = await client.responses.create(model=MODEL, input=ASK, max_output_tokens=5, stream=True)
        events = [event async for event in stream]
        final = events[-1]
        assert final.type == "response.incomplete" and final.response.output_text == cut.output_text


async def test_a_responses_stream_names_the_text_it_produced(harness: Harness) -> None:
    async with sdk(harness, await key_of(harness)) as client:
        answer = await client.responses.create(model=MODEL, input=ASK)
        stream = await client.responses.create(model=MODEL, input=ASK, stream=True)
        events = {event.type: event async for event in stream}
        assert events["response.output_text.done"].text == answer.output_text  # type: ignore[union-attr]
        assert events["response.content_part.done"].part.text == answer.output_text  # type: ignore[union-attr]
        async with client.responses.stream(model=MODEL, input=ASK) as helper:
            final = await helper.get_final_response()
        assert final.output_text == answer.output_text


async def test_images_need_a_model_with_vision(harness: Harness) -> None:
    parts: Any = [
        {"role": "user", "content": [{"type": "text", "text": "What is this?"}, image_part()]},
    ]
    key = await key_of(harness)
    async with sdk(harness, key) as client:
        with pytest.raises(openai.BadRequestError) as refused:
            await client.chat.completions.create(model=MODEL, messages=parts)
        assert refused.value.code == "image_not_supported" and refused.value.param == "model"
        assert MODEL in refused.value.message and "vision" in refused.value.message
        seen = await client.chat.completions.create(model=VISION_MODEL, messages=parts)
        assert "(I received 1 image.)" in (seen.choices[0].message.content or "")
        item: Any = [
            {
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "And this?"},
                    {"type": "input_image", "image_url": IMAGE},
                ],
            }
        ]
        with pytest.raises(openai.BadRequestError) as responses_refused:
            await client.responses.create(model=MODEL, input=item)
        assert MODEL in responses_refused.value.message
        assert (await client.responses.create(model=VISION_MODEL, input=item)).status == "completed"
    block = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
    turn: Any = [{"role": "user", "content": [{"type": "text", "text": "What is this?"}, block]}]
    async with messages_sdk(harness, key) as claude:
        with pytest.raises(anthropic.BadRequestError) as messages_refused:
            await claude.messages.create(model=MODEL, max_tokens=50, messages=turn)
        assert MODEL in messages_refused.value.message
        answered = await claude.messages.create(model=VISION_MODEL, max_tokens=50, messages=turn)
        assert "(I received 1 image.)" in answered.content[0].text  # type: ignore[union-attr]


def image_part() -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": IMAGE}}


@pytest.mark.parametrize("plan", ["starter", "professional", "enterprise"])
async def test_a_model_that_exists_nowhere_is_refused_on_every_plan(harness: Harness, plan: str) -> None:
    nowhere = "no-such-model-anywhere"
    key = await key_of(harness, plan, ("chat", "models", *(("embeddings",) if plan != "starter" else ())))
    async with sdk(harness, key) as client:
        calls = [
            client.chat.completions.create(model=nowhere, messages=[{"role": "user", "content": "Hi"}]),
            client.completions.create(model=nowhere, prompt="Hi"),
            client.responses.create(model=nowhere, input="Hi"),
        ]
        if plan != "starter":
            calls.append(client.embeddings.create(model=nowhere, input="Hi"))
        for call in calls:
            with pytest.raises(openai.BadRequestError) as refused:
                await call
            assert refused.value.code == "model_not_found" and refused.value.param == "model"
            assert nowhere in refused.value.message


async def test_models_lists_only_what_the_keys_scopes_reach(harness: Harness) -> None:
    admin = await harness.tenant("professional")

    async def listed(scopes: list[str]) -> list[str]:
        key = (await create(harness, admin, scopes=scopes)).json()["key"]
        async with sdk(harness, key) as client:
            return [m.id async for m in client.models.list()]

    chat_only = await listed(["chat", "models"])
    assert MODEL in chat_only and EMBEDDER not in chat_only
    assert await listed(["embeddings", "models"]) == [EMBEDDER]
    both = await listed(["chat", "embeddings", "models"])
    assert set(both) == {*chat_only, EMBEDDER}
    assert await listed(["models"]) == []  # it may call nothing
    key = (await create(harness, admin, scopes=["chat", "models"])).json()["key"]
    async with sdk(harness, key) as client:
        with pytest.raises(openai.NotFoundError):
            await client.models.retrieve(EMBEDDER)
        assert (await client.models.retrieve(MODEL)).id == MODEL


async def test_messages_answers_carry_the_request_id(harness: Harness) -> None:
    async with messages_sdk(harness, await key_of(harness)) as claude:
        hello: Any = [{"role": "user", "content": "Hello"}]
        raw = await claude.messages.with_raw_response.create(model=MODEL, max_tokens=20, messages=hello)
        message = await raw.parse()
        assert message._request_id and message._request_id == raw.headers["x-request-id"]
        async with claude.messages.stream(model=MODEL, max_tokens=20, messages=hello) as stream:
            await stream.get_final_message()
        assert stream.response.headers["request-id"] == stream.response.headers["x-request-id"]
        with pytest.raises(anthropic.BadRequestError) as refused:
            await claude.messages.create(model="no-such-model", max_tokens=20, messages=hello)
        assert refused.value.request_id == refused.value.response.headers["x-request-id"]
