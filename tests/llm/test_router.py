"""The router: fallback across backends, the mid-stream rule, unknown models and weighted picks."""

from __future__ import annotations

import logging
import random
from collections import Counter
from collections.abc import AsyncIterator

import pytest

from agent_server.foundation.clock import ManualClock
from agent_server.foundation.errors import ModelNotFound, UpstreamFailed, ValidationFailed
from agent_server.foundation.settings_llm import RouteEntry
from agent_server.llm.mock import MockBackend
from agent_server.llm.router import Router
from agent_server.llm.types import ChatRequest, Completion, Delta, LLMBackend
from tests.llm.conftest import UPSTREAM_KEY, Factory, closed_port_url
from tests.llm.fake_upstream import FakeUpstream
from tests.llm.test_openai_compat import chat


def router(backends: dict[str, LLMBackend], routes: dict[str, list[RouteEntry]], seed: int = 0) -> Router:
    return Router(backends, None, lambda: routes, ManualClock(), rng=random.Random(seed))


def fallback(*names: str) -> list[RouteEntry]:
    return [RouteEntry(backend=name, priority=index) for index, name in enumerate(names)]


async def test_falls_back_to_the_next_backend_before_the_first_byte(
    upstream: FakeUpstream, make_backend: Factory
) -> None:
    dead, live = make_backend(closed_port_url(), "dead"), make_backend(upstream.base_url, "live")
    r = router({"dead": dead, "live": live}, {"gpt-test": fallback("dead", "live")})
    assert (await r.complete(chat())).content == "Hello from the upstream!"
    deltas = [d async for d in r.stream(chat(stream=True))]
    assert "".join(d.content for d in deltas) == "Hello from the upstream!"
    assert deltas[-1].finish_reason == "stop"


async def test_falls_back_after_5xx_and_reports_the_last_failure(
    upstream: FakeUpstream, upstream2: FakeUpstream, make_backend: Factory
) -> None:
    upstream.script.fail_times = 10
    a, b = make_backend(upstream.base_url, "a", retries=1), make_backend(upstream2.base_url, "b")
    r = router({"a": a, "b": b}, {"gpt-test": fallback("a", "b")})
    assert (await r.complete(chat())).content
    assert (len(upstream.requests), len(upstream2.requests)) == (2, 1)  # one retry, then the next backend
    upstream2.script.fail_times = 10
    with pytest.raises(UpstreamFailed):
        await r.complete(chat())


async def test_a_400_does_not_fall_back(
    upstream: FakeUpstream, upstream2: FakeUpstream, make_backend: Factory
) -> None:
    upstream.script.fail_times, upstream.script.fail_status = 1, 400
    a, b = make_backend(upstream.base_url, "a"), make_backend(upstream2.base_url, "b")
    with pytest.raises(ValidationFailed):
        await router({"a": a, "b": b}, {"gpt-test": fallback("a", "b")}).complete(chat())
    assert upstream2.requests == []


async def test_no_retry_or_fallback_after_the_first_byte(
    upstream: FakeUpstream, upstream2: FakeUpstream, make_backend: Factory
) -> None:
    upstream.script.break_after = 2
    a, b = make_backend(upstream.base_url, "a"), make_backend(upstream2.base_url, "b")
    got: list[str] = []
    with pytest.raises(UpstreamFailed) as caught:
        async for delta in router({"a": a, "b": b}, {"gpt-test": fallback("a", "b")}).stream(
            chat(stream=True)
        ):
            got.append(delta.content)
    assert got == ["Hello", " from"]
    assert caught.value.http_status == 502 and caught.value.code == "upstream_error"
    assert (len(upstream.requests), upstream2.requests) == (1, [])


async def test_mid_stream_stall_becomes_upstream_failed_with_timeout_code(
    upstream: FakeUpstream, make_backend: Factory
) -> None:
    upstream.script.break_after, upstream.script.break_mode = 1, "stall"
    a = make_backend(upstream.base_url, "a", read_timeout=0.3)
    with pytest.raises(UpstreamFailed) as caught:
        async for _ in router({"a": a}, {"gpt-test": fallback("a")}).stream(chat(stream=True)):
            pass
    assert caught.value.code == "upstream_timeout"


async def test_unknown_model_is_model_not_found() -> None:
    r = router({"mock": MockBackend()}, {"agentgate-mock-small": fallback("mock")})
    with pytest.raises(ModelNotFound) as caught:
        await r.complete(ChatRequest(model="nope", messages=[{"role": "user", "content": "hi"}]))
    assert (caught.value.http_status, caught.value.param, caught.value.code) == (
        400,
        "model",
        "model_not_found",
    )
    with pytest.raises(ModelNotFound):
        async for _ in r.stream(ChatRequest(model="nope", messages=[{"role": "user", "content": "hi"}])):
            pass


class Counting:
    """A stub backend that answers with its own name."""

    def __init__(self, name: str) -> None:
        self.name = name

    async def complete(self, request: ChatRequest) -> Completion:
        return await MockBackend().complete(request.model_copy(update={"model": self.name}))

    async def stream(self, request: ChatRequest) -> AsyncIterator[Delta]:
        yield Delta(self.name, "stop")


async def test_router_spreads_requests_by_weight() -> None:
    entries = [RouteEntry(backend="a", weight=1), RouteEntry(backend="b", weight=4)]
    r = router({"a": Counting("a"), "b": Counting("b")}, {"m": entries}, seed=99)
    request = ChatRequest(model="m", messages=[{"role": "user", "content": "hi"}])
    served = Counter([(await r.complete(request)).model for _ in range(2000)])
    assert abs(served["b"] / 2000 - 0.8) < 0.03


async def test_the_upstream_key_never_reaches_the_logs(
    upstream: FakeUpstream, make_backend: Factory, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    upstream.script.fail_times, upstream.script.fail_status = 1, 401
    upstream.script.fail_body = {"error": {"message": f"Incorrect API key provided: {UPSTREAM_KEY}"}}
    a, b = make_backend(upstream.base_url, "a"), make_backend(closed_port_url(), "b")
    r = router({"a": a, "b": b}, {"gpt-test": fallback("b", "a")})
    with pytest.raises(UpstreamFailed) as caught:
        await r.complete(chat())  # b refused (retried), a answered 401
    assert UPSTREAM_KEY not in str(caught.value)
    [d async for d in r.stream(chat(stream=True))]
    upstream.script.fail_times, upstream.script.fail_status = 1, 500
    await a.complete(chat())  # a 5xx and its retry
    assert "rejected our credentials" in caplog.text and "falling back" in caplog.text
    assert UPSTREAM_KEY not in caplog.text
    assert UPSTREAM_KEY not in repr(a) and UPSTREAM_KEY not in repr(a.__dict__.get("models"))
