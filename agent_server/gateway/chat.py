"""Server-sent events of the relayed /v1 streams: the chunks' bytes, then an end in the API's style.

The chunks that arrived in one network read from the upstream (one batch of the relay) are written
together: a stream costs a few socket writes, not one per event, without holding back anything
that has arrived.

A stream that fails after it started (status 200 already sent) ends in-band, never silently:
chat and legacy completions with an error chunk in the gateway envelope and then
``data: [DONE]`` (the OpenAI SDK raises ``APIError``), the Responses API with its own ``error``
event. Every stream ends with ``[DONE]`` except a Responses stream, which OpenAI ends with its
final ``response.completed`` event.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import aclosing
from typing import NamedTuple, Protocol

from pydantic_core import to_json

from agent_server.foundation.errors import AgentError, gateway_envelope
from agent_server.llm.types import Chunk
from agent_server.llm.wire import DONE, sse

log = logging.getLogger("agentgate.gateway")


def error_event(err: AgentError, last: Chunk | None = None) -> bytes:
    """The in-band error of chat and legacy completion streams (the gateway envelope)."""
    return sse(to_json(gateway_envelope(err)))


def responses_error_event(err: AgentError, last: Chunk | None = None) -> bytes:
    """The Responses API's ``error`` event, numbered after the last event sent."""
    number = last.data.get("sequence_number") if last is not None and last.data else None
    data = {
        "type": "error",
        "code": err.code,
        "message": err.message,
        "param": err.param,
        "sequence_number": number + 1 if isinstance(number, int) else 0,
    }
    return sse(to_json(data), b"error")


class StreamStyle(NamedTuple):
    error: Callable[[AgentError, Chunk | None], bytes]
    end: bytes  # after the last event


OPENAI_STREAM = StreamStyle(error_event, DONE)
RESPONSES_STREAM = StreamStyle(responses_error_event, b"")


class EventSource(Protocol):
    """A relayed stream (``relay.Streamed``, or a wrapper of one): its chunks, one batch per read."""

    def batches(self) -> AsyncIterator[list[Chunk]]: ...


async def event_stream(streamed: EventSource, style: StreamStyle = OPENAI_STREAM) -> AsyncIterator[bytes]:
    """The body of a relayed stream: each batch of events in one write, then the end."""
    last: Chunk | None = None
    end = style.end
    try:
        async with aclosing(streamed.batches()) as batches:  # type: ignore[type-var]
            async for batch in batches:
                last = batch[-1]
                if piece := b"".join([chunk.raw for chunk in batch]):
                    yield piece
    except AgentError as err:
        end = style.error(err, last) + end
    except Exception:
        log.exception("a relayed stream failed after it started")
        end = style.error(AgentError("The stream failed; please retry."), last) + end
    if end:
        yield end
