"""The sandbox LLM: deterministic, offline, counts tokens and streams in several chunks."""

from __future__ import annotations

import hashlib
import re
from collections.abc import AsyncIterator

from agent_server.llm.types import ChatRequest, Completion, Delta, Usage

_TOKEN = re.compile(r"\w+|[^\w\s]")
_OPENINGS = ("Sure.", "Here is a short answer.", "Understood.", "Good question.")


def count_tokens(text: str) -> int:
    """An approximation (words and punctuation) that is stable across runs."""
    return len(_TOKEN.findall(text))


def _reply(request: ChatRequest) -> str:
    last_user = next((m.content or "" for m in reversed(request.messages) if m.role == "user"), "")
    digest = hashlib.sha256(f"{request.model}\n{last_user}".encode()).digest()
    opening = _OPENINGS[digest[0] % len(_OPENINGS)]
    words = last_user.split()
    topic = " ".join(words[:12]) + ("..." if len(words) > 12 else "")
    text = f"{opening} This is the sandbox model {request.model} answering: {topic}"
    if request.max_tokens is not None:
        text = _truncate(text, request.max_tokens)
    return text


def _truncate(text: str, max_tokens: int) -> str:
    tokens = _TOKEN.findall(text)
    return text if len(tokens) <= max_tokens else " ".join(tokens[:max_tokens])


def count_prompt_tokens(request: ChatRequest) -> int:
    """The prompt's tokens by the same approximation (4 per message for the role framing)."""
    return sum(count_tokens(m.content or "") + 4 for m in request.messages)


class MockBackend:
    """Same input, same output: the answer quotes the last user message."""

    name = "mock"

    async def complete(self, request: ChatRequest) -> Completion:
        text = _reply(request)
        usage = Usage(count_prompt_tokens(request), count_tokens(text))
        return Completion(text, _finish(request, text), usage, request.model)

    async def stream(self, request: ChatRequest) -> AsyncIterator[Delta]:
        text = _reply(request)
        pieces = re.findall(r"\S+\s*", text)
        for piece in pieces[:-1]:
            yield Delta(piece)
        yield Delta(
            pieces[-1] if pieces else "",
            _finish(request, text),
            Usage(count_prompt_tokens(request), count_tokens(text)),
        )


def _finish(request: ChatRequest, text: str) -> str:
    return "length" if request.max_tokens is not None and count_tokens(text) >= request.max_tokens else "stop"
