"""The LLM seam: one request shape, one result shape, one backend protocol."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: Literal["system", "user", "assistant", "tool", "developer"]
    content: str | None = None


class ChatRequest(BaseModel):
    """The chat-completions request (spec 2.2); unknown OpenAI fields are kept and passed upstream."""

    model_config = ConfigDict(extra="allow")

    model: str = Field(min_length=1, max_length=200)
    messages: list[ChatMessage] = Field(min_length=1)
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_tokens: int | None = Field(default=None, ge=1)
    stream: bool = False


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int
    completion_tokens: int

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True)
class Completion:
    content: str
    finish_reason: str
    usage: Usage
    model: str
    # OpenAI ``message.tool_calls`` as the upstream sent them (None when the model called no tool).
    tool_calls: list[dict[str, Any]] | None = None


@dataclass(frozen=True)
class Delta:
    """One streamed piece; the last one has a finish_reason and the usage."""

    content: str
    finish_reason: str | None = None
    usage: Usage | None = None
    # OpenAI ``delta.tool_calls`` fragments of this chunk, passed through as the upstream sent them.
    tool_calls: list[dict[str, Any]] | None = None
    # Another delta arrived in the same network read and follows at once: a writer may hold this
    # one and send both in one write (one system call per read, not per delta).
    more: bool = False


class LLMBackend(Protocol):
    name: str

    async def complete(self, request: ChatRequest) -> Completion: ...

    def stream(self, request: ChatRequest) -> AsyncIterator[Delta]: ...
