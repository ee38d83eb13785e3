"""A chat-completions stream as the Messages API's events, as Anthropic sends them.

``message_start`` and a ``ping`` open the stream; text pieces become a text block
(``content_block_start``, ``content_block_delta`` with ``text_delta``..., ``content_block_stop``),
each tool call a ``tool_use`` block whose arguments arrive as ``input_json_delta`` pieces; at the
end ``message_delta`` carries the stop reason and the usage, and ``message_stop`` closes. Choice 0
only (a Messages request has no ``n``).

The events leave with the chat chunks they come from, batch for batch, so nothing is held back
beyond what the relay holds (the opening, until content comes, so a failed upstream can still be
replaced). The usage rides on ``message_delta``: the relay meters it from there.
"""

from __future__ import annotations

from typing import Any

from pydantic_core import to_json

from agent_server.llm.anthropic_answer import cached_tokens, matched_stop, stop_of, usage_json
from agent_server.llm.tokens import count_tokens, messages_tokens
from agent_server.llm.types import Call, Chunk, Usage
from agent_server.llm.wire import new_id, sse

Data = dict[str, Any]


def _event(name: str, data: Data, usage: Usage | None = None, text: str = "") -> Chunk:
    return Chunk(sse(to_json(data), name.encode()), data, usage, text)


class MessageEvents:
    """Feed it each batch of chat chunks, then take ``end()``'s closing events."""

    def __init__(self, call: Call, chat: Call) -> None:
        self._model = call.model
        self._stops = tuple(call.body.get("stop_sequences") or ())
        self._prompt = messages_tokens(chat.body["messages"])  # until the upstream says
        self._started = False
        self._open: int | None = None  # index of the block being written
        self._open_text = False
        self._tools: dict[int, int] = {}  # chat tool-call index -> block index
        self._blocks = 0
        self._finish: object = None
        self._matched: object = None
        self._usage: Usage | None = None
        self._cached = 0  # prompt tokens the upstream read from its cache
        self._generated: list[str] = []

    def feed(self, batch: list[Chunk]) -> list[Chunk]:
        out: list[Chunk] = []
        for chunk in batch:
            if chunk.usage is not None:
                self._usage, self._cached = chunk.usage, cached_tokens(chunk.data or {})
            for choice in (chunk.data or {}).get("choices") or ():
                if choice.get("index", 0) == 0:
                    self._choice(choice, out)
        return out

    def _choice(self, choice: Data, out: list[Chunk]) -> None:
        delta = choice.get("delta") or {}
        text = delta.get("content") or delta.get("refusal")
        if type(text) is str and text:
            self._text(text, out)
        for call in delta.get("tool_calls") or ():
            self._tool_call(call, out)
        if choice.get("finish_reason"):
            self._finish, self._matched = choice["finish_reason"], matched_stop(choice)

    def _start(self, out: list[Chunk]) -> None:
        if self._started:
            return
        self._started = True
        message = {
            "id": new_id("msg_"),
            "type": "message",
            "role": "assistant",
            "model": self._model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": self._prompt, "output_tokens": 0},
        }
        out.append(_event("message_start", {"type": "message_start", "message": message}))
        out.append(_event("ping", {"type": "ping"}))

    def _close(self, out: list[Chunk]) -> None:
        if self._open is not None:
            out.append(_event("content_block_stop", {"type": "content_block_stop", "index": self._open}))
            self._open = None

    def _begin(self, block: Data, out: list[Chunk]) -> int:
        self._start(out)
        self._close(out)
        index = self._open = self._blocks
        self._blocks += 1
        out.append(
            _event(
                "content_block_start", {"type": "content_block_start", "index": index, "content_block": block}
            )
        )
        return index

    def _text(self, text: str, out: list[Chunk]) -> None:
        if not self._open_text or self._open is None:
            self._begin({"type": "text", "text": ""}, out)
            self._open_text = True
        delta = {
            "type": "content_block_delta",
            "index": self._open,
            "delta": {"type": "text_delta", "text": text},
        }
        self._generated.append(text)
        out.append(_event("content_block_delta", delta, text=text))

    def _tool_call(self, call: Data, out: list[Chunk]) -> None:
        position = call.get("index", 0)
        function = call.get("function") or {}
        block = self._tools.get(position)
        if block is None:
            tool = {
                "type": "tool_use",
                "id": call.get("id") or new_id("toolu_"),
                "name": function.get("name") or "",
            }
            block = self._tools[position] = self._begin({**tool, "input": {}}, out)
            self._open_text = False
        piece = function.get("arguments")
        if type(piece) is str and piece:
            delta = {
                "type": "content_block_delta",
                "index": block,
                "delta": {"type": "input_json_delta", "partial_json": piece},
            }
            self._generated.append(piece)
            out.append(_event("content_block_delta", delta, text=piece))

    def end(self) -> list[Chunk]:
        """The closing events: the last block's stop, ``message_delta`` (with the usage), ``message_stop``."""
        out: list[Chunk] = []
        self._start(out)
        self._close(out)
        usage = self._usage or Usage(self._prompt, count_tokens(" ".join(self._generated)))
        stop_reason, sequence = stop_of(self._finish, self._matched, self._stops, bool(self._tools))
        delta = {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": sequence},
            "usage": usage_json(usage, self._cached),
        }
        out.append(_event("message_delta", delta, usage))
        out.append(_event("message_stop", {"type": "message_stop"}))
        return out
