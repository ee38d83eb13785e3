"""An upstream LLM call, observed: its duration in the upstream histogram (always, by backend,
endpoint and outcome) and, with traces on, a client span with the attributes of the OpenTelemetry
GenAI semantic conventions (operation, provider, request and response model, token usage, ...).

Used as decorators on ``OpenAICompatBackend.relay`` and ``relay_stream``, so every retry of the
backend is inside the observed call and every fallback to another backend is a call of its own.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import aclosing
from time import perf_counter
from typing import Any, Protocol, TypeVar

from agent_server.llm.types import CHAT, COMPLETIONS, EMBEDDINGS, Answer, Call, Chunk, Usage
from agent_server.observability import telemetry
from agent_server.observability.instruments import INSTRUMENTS

OPERATIONS = {CHAT: "chat", COMPLETIONS: "text_completion", EMBEDDINGS: "embeddings"}
PROVIDER = "openai"  # the wire protocol every configured upstream speaks
_REQUEST_PARAMETERS = {
    "max_tokens": "gen_ai.request.max_tokens",
    "max_completion_tokens": "gen_ai.request.max_tokens",
    "max_output_tokens": "gen_ai.request.max_tokens",
    "temperature": "gen_ai.request.temperature",
    "top_p": "gen_ai.request.top_p",
}


class Upstream(Protocol):
    name: str
    models: dict[str, str]


B = TypeVar("B", bound=Upstream)


def observed_relay(relay: Callable[[B, Call], Awaitable[Answer]]) -> Callable[[B, Call], Awaitable[Answer]]:
    @functools.wraps(relay)
    async def observed(backend: B, call: Call) -> Answer:
        started = perf_counter()
        span = _start_span(backend, call) if telemetry.tracer is not None else None
        outcome = "error"
        try:
            answer = await relay(backend, call)
            outcome = "ok"
            if span is not None:
                _answered(span, answer.data)
                _used(span, answer.usage)
            return answer
        except asyncio.CancelledError:
            outcome = "cancelled"
            raise
        except Exception as exc:
            if span is not None:
                telemetry.api.failed(span, exc)  # type: ignore[union-attr]
            raise
        finally:
            INSTRUMENTS.observe_upstream(backend.name, call.endpoint, outcome, perf_counter() - started)
            if span is not None:
                span.end()

    return observed


def observed_stream(
    relay_stream: Callable[[B, Call], AsyncIterator[list[Chunk]]],
) -> Callable[[B, Call], AsyncIterator[list[Chunk]]]:
    @functools.wraps(relay_stream)
    async def observed(backend: B, call: Call) -> AsyncIterator[list[Chunk]]:
        started = perf_counter()
        span = _start_span(backend, call) if telemetry.tracer is not None else None
        outcome = "cancelled"  # closed before its end: the client left
        usage: Usage | None = None
        try:
            async with aclosing(relay_stream(backend, call)) as batches:  # type: ignore[type-var]
                async for batch in batches:
                    if span is not None:
                        for chunk in batch:
                            if chunk.usage is not None:
                                usage = chunk.usage
                            if chunk.data:
                                _answered(span, chunk.data)
                    yield batch
            outcome = "ok"
        except Exception as exc:
            outcome = "error"
            if span is not None:
                telemetry.api.failed(span, exc)  # type: ignore[union-attr]
            raise
        finally:
            INSTRUMENTS.observe_upstream(backend.name, call.endpoint, outcome, perf_counter() - started)
            if span is not None:
                _used(span, usage)
                span.end()

    return observed


def _start_span(backend: Upstream, call: Call) -> Any:
    assert telemetry.tracer is not None and telemetry.api is not None
    operation = OPERATIONS.get(call.endpoint, "chat")
    model = backend.models.get(call.model, call.model)
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": operation,
        "gen_ai.provider.name": PROVIDER,
        "gen_ai.system": PROVIDER,  # the older name of the provider attribute
        "gen_ai.request.model": model,
        "agentgate.upstream": backend.name,
        "agentgate.model": call.model,
        "agentgate.stream": call.stream,
    }
    origin = getattr(backend, "_origin", None)  # (scheme, host, port) of an HTTP upstream
    if origin is not None:
        attributes["server.address"], attributes["server.port"] = origin[1], origin[2]
    for key, attribute in _REQUEST_PARAMETERS.items():
        value = call.body.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            attributes[attribute] = value
    return telemetry.tracer.start_span(
        f"{operation} {model}", kind=telemetry.api.CLIENT, attributes=attributes
    )


def _answered(span: Any, data: dict[str, Any]) -> None:
    """Response attributes from an answer (or a stream chunk) in the OpenAI shape."""
    if isinstance(identifier := data.get("id"), str):
        span.set_attribute("gen_ai.response.id", identifier)
    if isinstance(model := data.get("model"), str):
        span.set_attribute("gen_ai.response.model", model)
    choices = data.get("choices")
    if isinstance(choices, list):
        reasons = [c["finish_reason"] for c in choices if isinstance(c, dict) and c.get("finish_reason")]
        if reasons:
            span.set_attribute("gen_ai.response.finish_reasons", reasons)


def _used(span: Any, usage: Usage | None) -> None:
    if usage is not None:
        span.set_attribute("gen_ai.usage.input_tokens", usage.prompt_tokens)
        span.set_attribute("gen_ai.usage.output_tokens", usage.completion_tokens)
