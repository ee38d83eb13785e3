"""The LLM seam: two request shapes, their results, and the backend protocols.

- The **typed** seam (``ChatRequest`` -> ``Completion`` / ``Delta``) is what the site's ask and chat
  features and the admin playground use: text in, text out.
- The **relay** seam (``Call`` -> ``Answer`` / ``Chunk``) is what the /v1 gateway uses: the client's
  JSON body goes upstream unchanged but for the model id, and the upstream's bytes come back with
  only the model id replaced, so no field the gateway does not know is lost.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple, Protocol

from pydantic import BaseModel, ConfigDict, Field

# The endpoints of the relay seam: the path under an upstream's base URL.
CHAT = "chat/completions"
COMPLETIONS = "completions"
EMBEDDINGS = "embeddings"
RESPONSES = "responses"


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: Literal["system", "user", "assistant", "tool", "developer", "function"]
    # A string, or OpenAI content parts ({"type": "text", "text": ...}, images, audio, files).
    content: str | list[dict[str, Any]] | None = None


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


RawHeaders = tuple[tuple[bytes, bytes], ...]  # (name, value) pairs as on the wire, names lower-case


@dataclass(frozen=True, slots=True)
class Call:
    """One request of the relay seam, as the client sent it (``body`` is never mutated)."""

    endpoint: str  # CHAT, COMPLETIONS, EMBEDDINGS or RESPONSES
    model: str  # the public model id; the answer carries it whatever the upstream calls the model
    body: dict[str, Any]
    stream: bool = False
    # The client asked for the usage chunk (stream_options.include_usage); upstreams are always
    # asked for it, for metering, and it is passed on only when this is set.
    include_usage: bool = False
    created: int = 0  # the gateway's clock, for answers the gateway itself makes up
    # Request headers a native upstream gets as the client sent them (Messages: anthropic-beta,
    # anthropic-version); upstreams the call is translated for ignore them.
    upstream_headers: RawHeaders = ()


class Answer(NamedTuple):
    """A JSON answer: the bytes the client gets, the same parsed, and the usage to meter."""

    body: bytes
    data: dict[str, Any]
    usage: Usage


class Chunk(NamedTuple):
    """One server-sent event of a relayed stream.

    ``raw`` is what the client gets (``data: ...\\n\\n``, with an ``event:`` line for the Responses
    API), empty when nothing is to be sent (a usage chunk the client did not ask for). ``usage`` is
    set on the event that carried it; every stream has at least one such chunk, the last one
    counting. ``text`` is the generated text of the event, for an estimate when a stream breaks.
    """

    raw: bytes
    data: dict[str, Any] | None
    usage: Usage | None = None
    text: str = ""


class RelayBackend(Protocol):
    name: str

    async def relay(self, call: Call) -> Answer: ...

    def relay_stream(self, call: Call) -> AsyncIterator[list[Chunk]]:
        """The stream's chunks, in batches: each batch is what one network read brought (never
        empty), so a writer sends it in one write and holds nothing back."""
        ...
