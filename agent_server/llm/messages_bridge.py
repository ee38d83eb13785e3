"""The Messages API over any backend: natively where the backend speaks it, translated elsewhere.

``relay_for(backend, call)`` is where a backend's relay seam is picked for a call: by the router
for each backend of a route, and by the gateway's exchange for the backend it was given (the mock
for sandbox keys, a BYOK client). A ``messages`` call reaches a backend that serves the Messages
API (``serves_messages``: an Anthropic-compatible upstream, or the router, which decides per
backend) as it was sent; any other backend gets it through ``MessagesOverChat``, as chat
completions. Every other call goes to ``relay_of`` unchanged, so the other endpoints pay one
comparison for this.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing

from pydantic_core import to_json

from agent_server.foundation.errors import UpstreamFailed
from agent_server.llm.adapter import relay_of
from agent_server.llm.anthropic_answer import message_of
from agent_server.llm.anthropic_stream import MessageEvents
from agent_server.llm.anthropic_translate import MESSAGES, chat_body
from agent_server.llm.types import CHAT, Answer, Call, Chunk, LLMBackend, RelayBackend


def relay_for(backend: LLMBackend | RelayBackend, call: Call) -> RelayBackend:
    if call.endpoint != MESSAGES or getattr(backend, "serves_messages", False):
        return relay_of(backend)
    return MessagesOverChat(relay_of(backend))


def chat_call(call: Call) -> Call:
    """The chat-completions call of a Messages call (the usage chunk is metered, not shown)."""
    return Call(CHAT, call.model, chat_body(call.body), call.stream, False, call.created)


class MessagesOverChat:
    """A backend of chat completions behind the Messages API: the request translated on the way
    up, the answer (or each batch of the stream) on the way down."""

    __slots__ = ("_inner", "name")

    def __init__(self, inner: RelayBackend) -> None:
        self._inner = inner
        self.name = inner.name

    async def relay(self, call: Call) -> Answer:
        answer = await self._inner.relay(chat_call(call))
        stops = tuple(call.body.get("stop_sequences") or ())
        try:
            message = message_of(answer.data, call.model, stops, answer.usage)
        except (AttributeError, TypeError, KeyError):  # e.g. a "message" that is no object
            raise UpstreamFailed(f"upstream {self.name} sent an unreadable answer") from None
        return Answer(to_json(message), message, answer.usage)

    async def relay_stream(self, call: Call) -> AsyncIterator[list[Chunk]]:
        chat = chat_call(call)
        events = MessageEvents(call, chat)
        async with aclosing(self._inner.relay_stream(chat)) as batches:  # type: ignore[type-var]
            async for batch in batches:
                if out := _translated(events, batch, self.name):
                    yield out
        yield events.end()


def _translated(events: MessageEvents, batch: list[Chunk], name: str) -> list[Chunk]:
    try:
        return events.feed(batch)
    except (AttributeError, TypeError, KeyError):  # e.g. "choices" that are no objects
        raise UpstreamFailed(f"upstream {name} sent an unreadable stream chunk") from None
