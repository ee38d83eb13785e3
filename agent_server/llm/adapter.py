"""Between the two seams of ``llm/types.py``: typed requests over a relay, and typed backends relayed.

- ``chat_call``, ``completion_of`` and ``typed_deltas`` let a relay backend (an OpenAI-compatible
  upstream) answer the typed seam, which reads choice 0's text and tool calls.
- ``relay_of`` gives any backend the relay seam: a backend with ``relay`` is itself; one with only
  ``complete``/``stream`` (a test double, a wrapper) answers chat completions with choice 0 only.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

from pydantic_core import to_json

from agent_server.foundation.errors import UpstreamFailed
from agent_server.llm.tokens import count_tokens, prompt_tokens
from agent_server.llm.types import (
    CHAT,
    Answer,
    Call,
    ChatRequest,
    Chunk,
    Completion,
    Delta,
    LLMBackend,
    RelayBackend,
    Usage,
)
from agent_server.llm.wire import chunk_dict, completion_dict, completion_id, sse, usage_json


def chat_call(request: ChatRequest, *, stream: bool = False) -> Call:
    body = request.model_dump(exclude_none=True)
    return Call(CHAT, request.model, body, stream=stream or request.stream)


def completion_of(answer: Answer, request: ChatRequest) -> Completion:
    """Choice 0 of a relayed chat answer."""
    try:
        choice = answer.data["choices"][0]
        message = choice.get("message") or {}
        content = message.get("content") or ""
        return Completion(
            content if isinstance(content, str) else "",
            choice.get("finish_reason") or "stop",
            answer.usage,
            request.model,
            message.get("tool_calls"),
        )
    except (KeyError, IndexError, TypeError, AttributeError):
        raise UpstreamFailed("the upstream sent an unreadable completion") from None


async def typed_deltas(batches: AsyncIterator[list[Chunk]]) -> AsyncIterator[Delta]:
    """Choice 0's content and tool-call pieces, then a last delta with finish_reason and usage."""
    finish, usage = "stop", None
    async with aclosing(batches):  # type: ignore[type-var]
        async for batch in batches:
            for chunk in batch:
                usage = chunk.usage or usage
                choice = _choice0(chunk.data)
                if choice is None:
                    continue
                finish = choice.get("finish_reason") or finish
                delta = choice.get("delta") or {}
                content, tool_calls = delta.get("content") or "", delta.get("tool_calls")
                if content or tool_calls:
                    yield Delta(content, None, None, tool_calls)
    yield Delta("", finish, usage)


def _choice0(data: dict[str, Any] | None) -> dict[str, Any] | None:
    choices = data.get("choices") if data else None
    if not choices:
        return None
    choice = choices[0]
    return choice if isinstance(choice, dict) and choice.get("index", 0) == 0 else None


def relay_of(backend: LLMBackend | RelayBackend) -> RelayBackend:
    if hasattr(backend, "relay"):
        return backend  # type: ignore[return-value]
    return TypedRelay(backend)  # type: ignore[arg-type]


class TypedRelay:
    """A typed backend behind the relay seam: chat completions only, one choice."""

    def __init__(self, backend: LLMBackend) -> None:
        self._backend = backend
        self.name = backend.name

    def _request(self, call: Call) -> ChatRequest:
        if call.endpoint != CHAT:
            raise UpstreamFailed(f"backend {self.name} serves chat completions only, not /{call.endpoint}")
        return ChatRequest.model_validate(call.body)

    async def relay(self, call: Call) -> Answer:
        completion = await self._backend.complete(self._request(call))
        data = completion_dict(completion_id(), call.created, completion)
        return Answer(to_json(data), data, completion.usage)

    async def relay_stream(self, call: Call) -> AsyncIterator[list[Chunk]]:
        request = self._request(call)
        cid = completion_id()

        def chunk(delta: dict[str, Any], finish: str | None = None) -> Chunk:
            data = chunk_dict(
                cid, call.created, call.model, [{"index": 0, "delta": delta, "finish_reason": finish}]
            )
            return Chunk(sse(to_json(data)), data, None, delta.get("content") or "")

        # The role chunk goes out with the first content, as an upstream's opening is held back;
        # deltas of one read (``Delta.more``) leave in one batch.
        batch = [chunk({"role": "assistant", "content": ""})]
        finish, usage, tokens = "stop", None, 0
        async with aclosing(self._backend.stream(request)) as deltas:  # type: ignore[type-var]
            async for delta in deltas:
                usage, finish = delta.usage or usage, delta.finish_reason or finish
                fields: dict[str, Any] = {}
                if delta.content:
                    fields["content"] = delta.content
                    tokens += count_tokens(delta.content)
                if delta.tool_calls:
                    fields["tool_calls"] = delta.tool_calls
                if fields:
                    batch.append(chunk(fields))
                    if not delta.more:
                        yield batch
                        batch = []
        usage = usage or Usage(prompt_tokens(call), tokens)
        batch.append(chunk({}, finish))
        data = {**chunk_dict(cid, call.created, call.model, []), "usage": usage_json(usage)}
        batch.append(Chunk(sse(to_json(data)) if call.include_usage else b"", data, usage))
        yield batch
