"""The sandbox LLM: deterministic, offline, on both seams and every endpoint of the relay.

What it answers is in ``mock_reply.py`` (the conversation), ``mock_chat.py`` (chat completions),
``mock_responses.py`` (the Responses API) and ``mock_text.py`` (legacy completions, embeddings).
The typed seam (the site's ask and chat, the playground) reads choice 0 of its chat answer.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

from pydantic_core import to_json

from agent_server.foundation.errors import ValidationFailed
from agent_server.llm.adapter import chat_call, completion_of, typed_deltas
from agent_server.llm.mock_chat import chat_answer, chat_chunks
from agent_server.llm.mock_responses import response_answer, response_events
from agent_server.llm.mock_text import completion_answer, completion_chunks, embeddings_answer
from agent_server.llm.types import (
    CHAT,
    COMPLETIONS,
    EMBEDDINGS,
    RESPONSES,
    Answer,
    Call,
    ChatRequest,
    Chunk,
    Completion,
    Delta,
    Usage,
)

_ANSWERS: dict[str, Callable[[Call], tuple[dict[str, Any], Usage]]] = {
    CHAT: chat_answer,
    COMPLETIONS: completion_answer,
    EMBEDDINGS: embeddings_answer,
    RESPONSES: response_answer,
}
_STREAMS: dict[str, Callable[[Call], list[Chunk]]] = {
    CHAT: chat_chunks,
    COMPLETIONS: completion_chunks,
    RESPONSES: response_events,
}


class MockBackend:
    """Same input, same output: the answer quotes the last user message."""

    name = "mock"

    async def complete(self, request: ChatRequest) -> Completion:
        return completion_of(await self.relay(chat_call(request)), request)

    def stream(self, request: ChatRequest) -> AsyncIterator[Delta]:
        return typed_deltas(self.relay_stream(chat_call(request, stream=True)))

    async def relay(self, call: Call) -> Answer:
        data, usage = _ANSWERS[call.endpoint](call)
        return Answer(to_json(data), data, usage)

    async def relay_stream(self, call: Call) -> AsyncIterator[list[Chunk]]:
        stream = _STREAMS.get(call.endpoint)
        if stream is None:
            raise ValidationFailed(f"/{call.endpoint} does not stream.", param="stream")
        yield stream(call)  # all at once, as an instant upstream's single read
