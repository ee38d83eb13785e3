"""Reading an upstream's chat-completion SSE stream line by line, without pydantic on the hot path.

Each ``data:`` line is one ``chat.completion.chunk``; the state keeps only what the final delta
needs (finish_reason, usage, and the text pieces in case the upstream sends no usage).
"""

from __future__ import annotations

import json
from typing import Any

from agent_server.errors import UpstreamFailed
from agent_server.llm.mock import count_prompt_tokens, count_tokens
from agent_server.llm.types import ChatRequest, Delta, Usage

_MAX_DETAIL = 500


def parse_usage(raw: object) -> Usage | None:
    if not isinstance(raw, dict):
        return None
    try:
        return Usage(int(raw["prompt_tokens"]), int(raw["completion_tokens"]))
    except (KeyError, TypeError, ValueError):
        return None


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


class StreamState:
    """Feed it every line; it returns a Delta for each chunk that carries content or tool calls."""

    __slots__ = ("_error_event", "done", "finish_reason", "name", "pieces", "usage")

    def __init__(self, name: str) -> None:
        self.name = name
        self.done = False
        self.finish_reason: str | None = None
        self.usage: Usage | None = None
        self.pieces: list[str] = []
        self._error_event = False

    def feed(self, line: bytes) -> Delta | None:
        """One line of the stream, without its ``\n`` (a trailing ``\r`` is tolerated)."""
        if self.done or not line.startswith(b"data:"):
            if line.startswith(b"event:") and line[6:].strip() == b"error":
                self._error_event = True
            return None  # blank separators, comments (": keep-alive"), other fields
        data = line[5:].strip()
        if data == b"[DONE]":
            self.done = True
            return None
        try:
            chunk = json.loads(data)
        except ValueError:
            raise UpstreamFailed(f"upstream {self.name} sent an unreadable stream chunk") from None
        if not isinstance(chunk, dict):
            raise UpstreamFailed(f"upstream {self.name} sent an unreadable stream chunk")
        if self._error_event or chunk.get("error"):
            # An in-band error must end the stream as an error, never as a silent success.
            raise UpstreamFailed(f"upstream {self.name} error: {upstream_error(chunk)}")
        usage = chunk.get("usage")
        if usage:
            self.usage = parse_usage(usage)
        choices = chunk.get("choices")
        if not choices:
            return None
        choice = choices[0]
        finish = choice.get("finish_reason")
        if finish:
            self.finish_reason = finish
        delta = choice.get("delta")
        if not delta:
            return None
        content = delta.get("content") or ""
        tool_calls = delta.get("tool_calls")
        if not content and not tool_calls:
            return None  # the role-only opening chunk: yielding it would end the fallback window
        self.pieces.append(content)
        return Delta(content, None, None, tool_calls)

    def final(self, request: ChatRequest) -> Delta:
        """The closing delta, or UpstreamFailed when the stream ended before it finished."""
        if not self.done and self.finish_reason is None:
            raise UpstreamFailed(f"upstream {self.name} stream ended before it finished")
        usage = self.usage or Usage(count_prompt_tokens(request), count_tokens("".join(self.pieces)))
        return Delta("", self.finish_reason or "stop", usage)
