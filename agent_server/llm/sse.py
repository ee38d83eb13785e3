"""Reading an upstream's server-sent events into relay chunks, without pydantic models.

``EventReader`` splits the byte stream into events (each network chunk is split once, on bytes);
``RelayState`` turns the events of one call into ``Chunk``s: the payload is parsed once
(``pydantic_core.from_json``, about four times faster than ``json.loads`` here) for what the
dialect reads, and the event passes on as the upstream wrote it but for the model id.

Opening events (the chat role chunk, ``response.created``) are held back until the first event
with content: until then nothing has reached the client and a failed upstream can still be
replaced by the next one of the route.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from pydantic_core import from_json

from agent_server.foundation.errors import UpstreamFailed
from agent_server.llm.dialects import DIALECTS
from agent_server.llm.tokens import estimate
from agent_server.llm.types import RESPONSES, Call, Chunk
from agent_server.llm.wire import ModelRewriter, sse

_MAX_DETAIL = 500
Event = tuple[bytes | None, bytes]  # (event name, data)


def upstream_error(body: bytes | str | dict[str, Any]) -> str:
    """The human message of an upstream error body (OpenAI shape or not), shortened."""
    data: object = body
    if isinstance(body, bytes | str):
        try:
            data = json.loads(body)
        except ValueError:
            text = body.decode(errors="replace") if isinstance(body, bytes) else body
            return text.strip()[:_MAX_DETAIL]
    if isinstance(data, dict):
        error = data.get("error", data)
        if isinstance(error, dict):
            error = error.get("message") or error.get("detail") or json.dumps(error)[:_MAX_DETAIL]
        return str(error)[:_MAX_DETAIL]
    return str(data)[:_MAX_DETAIL]


class EventReader:
    """Feed it the body piece by piece; it returns the events each piece completed."""

    __slots__ = ("_data", "_event", "_pending")

    def __init__(self) -> None:
        self._pending = b""
        self._event: bytes | None = None
        self._data: bytes | None = None

    def feed(self, piece: bytes) -> list[Event]:
        if b"\n" not in piece:
            self._pending += piece
            return []
        *lines, self._pending = (self._pending + piece).split(b"\n")
        return self._lines(lines)

    def close(self) -> list[Event]:
        """The events of a body that ended without its last blank line."""
        lines, self._pending = [self._pending, b""], b""
        return self._lines(lines)

    def _lines(self, lines: list[bytes]) -> list[Event]:
        events: list[Event] = []
        for line in lines:
            if line.startswith(b"data:"):
                value = line[5:].strip()
                self._data = value if self._data is None else self._data + b"\n" + value
            elif not line.strip():  # a blank line ends the event
                if self._data is not None:
                    events.append((self._event, self._data))
                self._event = self._data = None
            elif line.startswith(b"event:"):
                self._event = line[6:].strip()
            # comments (": keep-alive"), id: and retry: are not passed on
        return events


class StreamState(Protocol):
    """What turns an upstream's events into chunks: ``RelayState`` here, Anthropic's ``NativeEvents``."""

    done: bool

    def feed(self, events: list[Event]) -> list[Chunk]: ...

    def end(self) -> list[Chunk]: ...


class RelayState:
    """One relayed stream: feed it the events of each read, then ``end()`` at the end of the body."""

    __slots__ = (
        "_call",
        "_dialect",
        "_held",
        "_last",
        "_name",
        "_open",
        "_open_now",
        "_rewrite",
        "_texts",
        "_usage_seen",
        "done",
        "finished",
    )

    def __init__(self, name: str, call: Call) -> None:
        self._name, self._call = name, call
        self._dialect = DIALECTS[call.endpoint]
        self._rewrite = ModelRewriter(call.model)
        self._held: list[Chunk] = []
        self._open = self._open_now = self._usage_seen = False
        self._texts: list[str] = []
        self._last: dict[str, Any] | None = None
        self.done = False  # [DONE] or the final Responses event seen: the rest of the body is moot
        self.finished = False

    def feed(self, events: list[Event]) -> list[Chunk]:
        """The chunks to pass on now (the opening ones once content follows them)."""
        out: list[Chunk] = []
        for event, payload in events:
            chunk = self._chunk(event, payload)
            if chunk is None:
                continue
            if self._open:
                out.append(chunk)
            else:
                self._held.append(chunk)
                if self._open_now:
                    self._open = True
                    out += self._held
                    self._held = []
        return out

    def _chunk(self, event: bytes | None, payload: bytes) -> Chunk | None:
        if payload == b"[DONE]":
            self.done = True
            return None
        try:
            data = from_json(payload)
        except ValueError:
            raise UpstreamFailed(f"upstream {self._name} sent an unreadable stream chunk") from None
        if type(data) is not dict:
            raise UpstreamFailed(f"upstream {self._name} sent an unreadable stream chunk")
        dialect, call = self._dialect, self._call
        if dialect.is_error_event(event, data):
            # An in-band error must end the stream as an error, never as a silent success.
            raise UpstreamFailed(f"upstream {self._name} error: {upstream_error(data)}")
        try:
            raw = self._rewrite(payload, data, dialect.swap_model(data, call.model))
            usage = dialect.usage(data)
            content, finished, text = dialect.inspect(data)
        except (AttributeError, TypeError, KeyError):  # e.g. "choices" that are no objects
            raise UpstreamFailed(f"upstream {self._name} sent an unreadable stream chunk") from None
        if usage is not None:
            self._usage_seen = True
            if dialect.usage_only(data) and not call.include_usage:
                raw = b""  # forced upstream for metering; the client did not ask for it
        if finished:
            self.finished = True
            self.done = self.done or dialect.endpoint == RESPONSES
        if text:
            self._texts.append(text)
        self._open_now = content or usage is not None
        self._last = data
        return Chunk(sse(raw, event) if raw else b"", data, usage, text)

    def end(self) -> list[Chunk]:
        """The held and closing chunks, or UpstreamFailed when the stream ended unfinished."""
        if not self.done and not self.finished:
            raise UpstreamFailed(f"upstream {self._name} stream ended before it finished")
        out, self._held = self._held, []
        if not self._usage_seen:
            call = self._call
            usage = estimate(call, "".join(self._texts))
            raw = self._dialect.usage_event(call, self._last, usage) if call.include_usage else b""
            out.append(Chunk(raw, None, usage))
        return out
