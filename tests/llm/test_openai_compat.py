"""The OpenAI-compatible backend against a real fake upstream on loopback."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from agent_server.foundation.errors import TimedOut, Unavailable, UpstreamFailed, ValidationFailed
from agent_server.llm.types import ChatRequest, Delta
from tests.llm.conftest import UPSTREAM_KEY, Factory, closed_port_url
from tests.llm.fake_upstream import FakeUpstream


def chat(stream: bool = False, **extra: object) -> ChatRequest:
    return ChatRequest.model_validate(
        {
            "model": "gpt-test",
            "messages": [{"role": "user", "content": "Say hello"}],
            "stream": stream,
            **extra,
        }
    )


async def collect(backend, request: ChatRequest) -> list[Delta]:
    return [delta async for delta in backend.stream(request)]


async def test_json_completion_maps_the_model_and_passes_unknown_fields(
    upstream: FakeUpstream, make_backend: Factory
) -> None:
    backend = make_backend(upstream.base_url)
    completion = await backend.complete(chat(temperature=0.2, top_p=0.9, user="u-1", seed=7))
    assert completion.content == "Hello from the upstream!"
    assert completion.finish_reason == "stop"
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (11, 5)
    assert completion.model == "gpt-test"  # the public id, not the upstream's
    sent = upstream.requests[-1]
    assert sent["model"] == "upstream-model-1"
    assert (sent["top_p"], sent["user"], sent["seed"], sent["temperature"]) == (0.9, "u-1", 7, 0.2)
    assert sent["stream"] is False and "stream_options" not in sent
    assert upstream.headers[-1]["authorization"] == f"Bearer {UPSTREAM_KEY}"


async def test_missing_usage_is_counted_with_the_mock_counter(
    upstream: FakeUpstream, make_backend: Factory
) -> None:
    upstream.script.usage = False
    backend = make_backend(upstream.base_url)
    completion = await backend.complete(chat())
    assert completion.usage.completion_tokens == 5 and completion.usage.prompt_tokens > 0
    deltas = await collect(backend, chat(stream=True))
    assert deltas[-1].usage is not None and deltas[-1].usage.completion_tokens == 5


async def test_stream_passes_chunks_through_as_they_arrive(
    upstream: FakeUpstream, make_backend: Factory
) -> None:
    upstream.script.gate = threading.Event()  # the upstream holds its last chunk until we say so
    backend = make_backend(upstream.base_url)
    deltas = backend.stream(chat(stream=True, stream_options={"include_usage": False}))
    first = await asyncio.wait_for(anext(deltas), timeout=5)
    assert first.content == "Hello"
    assert not upstream.sent_last_chunk.is_set()  # we got it before the upstream finished
    upstream.script.gate.set()
    rest = [delta async for delta in deltas]
    assert "".join(d.content for d in [first, *rest]) == "Hello from the upstream!"
    assert [d.finish_reason for d in rest] == [None, None, None, None, "stop"]
    assert rest[-1].usage is not None and rest[-1].usage.prompt_tokens == 11  # the upstream's usage
    sent = upstream.requests[-1]
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}


async def test_more_marks_only_deltas_whose_successor_is_already_read(
    upstream: FakeUpstream, make_backend: Factory
) -> None:
    # A writer holds a delta marked "more" until the next one: marking one whose successor has not
    # arrived would hold text back while the upstream stalls.
    upstream.script.gate = threading.Event()  # the upstream holds its last chunk until we say so
    backend = make_backend(upstream.base_url)
    deltas = backend.stream(chat(stream=True))
    before_gate: list[Delta] = []
    while True:  # read until the next delta does not come: the upstream waits at its gate
        step = asyncio.ensure_future(anext(deltas))
        done, _ = await asyncio.wait({step}, timeout=0.3)
        if not done:
            break
        before_gate.append(step.result())
    assert before_gate and before_gate[-1].more is False
    upstream.script.gate.set()
    rest = [await step, *[delta async for delta in deltas]]
    assert rest[-1].more is False and rest[-1].finish_reason == "stop"
    assert "".join(d.content for d in [*before_gate, *rest]) == "Hello from the upstream!"


async def test_retries_a_5xx_before_the_first_byte(upstream: FakeUpstream, make_backend: Factory) -> None:
    upstream.script.fail_times = 1
    backend = make_backend(upstream.base_url, retries=1)
    assert (await backend.complete(chat())).content == "Hello from the upstream!"
    upstream.script.fail_times = 1
    assert len(await collect(backend, chat(stream=True))) == 6
    assert len(upstream.requests) == 4


async def test_gives_up_after_the_bounded_retries(upstream: FakeUpstream, make_backend: Factory) -> None:
    upstream.script.fail_times = 5
    backend = make_backend(upstream.base_url, retries=1)
    with pytest.raises(UpstreamFailed) as caught:
        await backend.complete(chat())
    assert caught.value.http_status == 502
    assert len(upstream.requests) == 2


@pytest.mark.parametrize(("status", "error"), [(503, Unavailable), (504, TimedOut), (502, UpstreamFailed)])
async def test_5xx_statuses_map_to_gateway_errors(
    upstream: FakeUpstream, make_backend: Factory, status: int, error: type[Exception]
) -> None:
    upstream.script.fail_times, upstream.script.fail_status = 5, status
    with pytest.raises(error):
        await make_backend(upstream.base_url, retries=0).complete(chat())


async def test_429_is_not_retried_and_is_unavailable(upstream: FakeUpstream, make_backend: Factory) -> None:
    upstream.script.fail_times, upstream.script.fail_status = 5, 429
    with pytest.raises(Unavailable):
        await make_backend(upstream.base_url, retries=1).complete(chat())
    assert len(upstream.requests) == 1


async def test_upstream_400_is_the_callers_problem_with_its_message(
    upstream: FakeUpstream, make_backend: Factory
) -> None:
    upstream.script.fail_times, upstream.script.fail_status = 5, 400
    upstream.script.fail_body = {
        "error": {"message": "max_tokens is too large", "type": "invalid_request_error"}
    }
    with pytest.raises(ValidationFailed) as caught:
        await make_backend(upstream.base_url).complete(chat())
    assert "max_tokens is too large" in caught.value.message
    assert len(upstream.requests) == 1  # never retried


async def test_upstream_401_is_our_misconfiguration_and_leaks_nothing(
    upstream: FakeUpstream, make_backend: Factory
) -> None:
    upstream.script.fail_times, upstream.script.fail_status = 5, 401
    upstream.script.fail_body = {"error": {"message": f"Incorrect API key provided: {UPSTREAM_KEY}"}}
    with pytest.raises(UpstreamFailed) as caught:
        await make_backend(upstream.base_url).complete(chat())
    assert caught.value.http_status == 502 and caught.value.code == "upstream_auth"
    assert UPSTREAM_KEY not in str(caught.value) and "Incorrect API key" not in caught.value.message


async def test_connection_refused_is_retried_then_unavailable(make_backend: Factory) -> None:
    backend = make_backend(closed_port_url(), retries=1)
    started = time.monotonic()
    with pytest.raises(Unavailable):
        await backend.complete(chat())
    with pytest.raises(Unavailable):
        await collect(backend, chat(stream=True))
    assert time.monotonic() - started < 2


async def test_slow_first_byte_times_out_at_the_read_timeout(
    upstream: FakeUpstream, make_backend: Factory
) -> None:
    upstream.script.first_byte_delay = 3
    backend = make_backend(upstream.base_url, read_timeout=0.3)
    started = time.monotonic()
    with pytest.raises(TimedOut):
        await backend.complete(chat())
    with pytest.raises(TimedOut):
        await collect(backend, chat(stream=True))
    assert time.monotonic() - started < 2
    assert len(upstream.requests) == 2  # a timeout is not retried on the same backend


async def test_slow_first_byte_within_the_timeout_is_fine(
    upstream: FakeUpstream, make_backend: Factory
) -> None:
    upstream.script.first_byte_delay = 0.2
    assert (await make_backend(upstream.base_url, read_timeout=2).complete(chat())).content


async def test_stream_dying_midway_raises_after_the_deltas_already_yielded(
    upstream: FakeUpstream, make_backend: Factory
) -> None:
    upstream.script.break_after = 2
    got: list[str] = []
    with pytest.raises(UpstreamFailed):
        async for delta in make_backend(upstream.base_url).stream(chat(stream=True)):
            got.append(delta.content)
    assert got == ["Hello", " from"]
    assert len(upstream.requests) == 1  # no retry once bytes were passed on


async def test_stream_stalling_midway_times_out_quickly(
    upstream: FakeUpstream, make_backend: Factory
) -> None:
    upstream.script.break_after, upstream.script.break_mode = 2, "stall"
    got: list[str] = []
    started = time.monotonic()
    with pytest.raises(TimedOut) as caught:
        async for delta in make_backend(upstream.base_url, read_timeout=0.3).stream(chat(stream=True)):
            got.append(delta.content)
    assert got == ["Hello", " from"] and caught.value.code == "upstream_timeout"
    assert time.monotonic() - started < 2


async def test_in_band_error_event_is_an_error_not_a_silent_success(
    upstream: FakeUpstream, make_backend: Factory
) -> None:
    upstream.script.break_after, upstream.script.break_mode = 1, "error"
    with pytest.raises(UpstreamFailed) as caught:
        await collect(make_backend(upstream.base_url), chat(stream=True))
    assert "overloaded mid-stream" in caught.value.message
