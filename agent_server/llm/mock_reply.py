"""What the sandbox mock answers to a conversation, whatever the API it came through.

Same input, same output. Plain text quotes the last user message (its text parts; images, audio
and files are acknowledged by count). With tools offered and ``tool_choice`` not ``"none"``, the
answer is a call to the named tool or the first one, with arguments that satisfy the tool's
required parameters, unless the conversation ends with a tool result (then the mock answers it in
text, so an agent loop ends). JSON mode answers a JSON object; a JSON schema gets an object with
its required properties. Token limits and stop sequences cut plain text only (JSON stays valid).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from agent_server.llm.mock_schema import sample
from agent_server.llm.tokens import count_tokens, text_of, truncate

_OPENINGS = ("Sure.", "Here is a short answer.", "Understood.", "Good question.")
_ATTACHMENTS = {"image_url": "image", "input_image": "image", "input_audio": "audio clip"}
_PIECE = re.compile(r"\S+\s*")


@dataclass(frozen=True, slots=True)
class Tool:
    name: str
    parameters: Any


@dataclass(frozen=True, slots=True)
class Ask:
    """A conversation as the mock reads it, from chat messages or Responses input items."""

    model: str
    messages: list[dict[str, Any]]
    tools: tuple[Tool, ...] = ()
    tool_choice: Any = None  # None/"auto", "none", "required", or a tool name
    json_format: dict[str, Any] | None = None  # {"type": "json_object"} or {"type": "json_schema", ...}
    limit: int | None = None  # max tokens
    stop: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Reply:
    content: str | None  # None when the reply is a tool call
    call: dict[str, str] | None  # {"id", "name", "arguments"}
    finish: str  # stop, length or tool_calls
    stop: str | None = None  # the stop sequence that cut the text (named as vLLM does: stop_reason)

    @property
    def pieces(self) -> list[str]:
        """The text as a stream sends it: word by word, each with its trailing space."""
        text = self.content if self.content is not None else (self.call or {}).get("arguments", "")
        return _PIECE.findall(text) or [text]

    @property
    def tokens(self) -> int:
        return count_tokens(self.content if self.content is not None else (self.call or {})["arguments"])


def answer(ask: Ask, index: int = 0) -> Reply:
    """Choice ``index`` of the mock's answer (choices differ in their opening sentence only)."""
    tool = _tool(ask)
    if tool is not None:
        arguments = json.dumps(sample(tool.parameters or {"type": "object"}), separators=(",", ":"))
        digest = _digest(ask.model, tool.name, arguments, str(index))
        return Reply(
            None, {"id": f"call_{digest.hex()[:24]}", "name": tool.name, "arguments": arguments}, "tool_calls"
        )
    if ask.json_format is not None:
        return Reply(json.dumps(_json_answer(ask, index), separators=(",", ":")), None, "stop")
    text = _text(ask, index)
    for stop in ask.stop:
        if stop and stop in text:
            return Reply(text[: text.index(stop)], None, "stop", stop)
    if ask.limit is not None:
        text = truncate(text, ask.limit)
        if count_tokens(text) >= ask.limit:
            return Reply(text, None, "length")
    return Reply(text, None, "stop")


def _digest(*parts: str) -> bytes:
    return hashlib.sha256("\n".join(parts).encode()).digest()


def _last(ask: Ask, *roles: str) -> dict[str, Any] | None:
    return next((m for m in reversed(ask.messages) if m.get("role") in roles), None)


def _tool(ask: Ask) -> Tool | None:
    choice = ask.tool_choice
    if not ask.tools or choice == "none":
        return None
    if isinstance(choice, str) and choice not in ("auto", "required"):
        return next((t for t in ask.tools if t.name == choice), ask.tools[0])
    last = ask.messages[-1] if ask.messages else {}
    if last.get("role") in ("tool", "function") and choice != "required":
        return None  # the tool answered: reply in text, so an agent's loop comes to an end
    return ask.tools[0]


def _text(ask: Ask, index: int) -> str:
    last = ask.messages[-1] if ask.messages else {}
    if last.get("role") in ("tool", "function"):
        result = text_of(last.get("content"))[:200]
        opening = _OPENINGS[(_digest(ask.model, result)[0] + index) % len(_OPENINGS)]
        return f"{opening} The tool returned: {result}"
    message = _last(ask, "user") or {}
    content = message.get("content")
    said = text_of(content)
    opening = _OPENINGS[(_digest(ask.model, said)[0] + index) % len(_OPENINGS)]
    words = said.split()
    topic = " ".join(words[:12]) + ("..." if len(words) > 12 else "")
    text = f"{opening} This is the sandbox model {ask.model} answering: {topic}"
    return text + _attachments(content)


def _attachments(content: Any) -> str:
    """`` (I received 2 images and 1 file.)`` for the non-text parts of a message."""
    if not isinstance(content, list):
        return ""
    counts: dict[str, int] = {}
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in _ATTACHMENTS or kind in ("file", "input_file"):
            noun = _ATTACHMENTS.get(kind, "file")
            counts[noun] = counts.get(noun, 0) + 1
    if not counts:
        return ""
    listed = [f"{n} {noun}{'s' if n > 1 else ''}" for noun, n in counts.items()]
    return f" (I received {' and '.join(listed)}.)"


def _json_answer(ask: Ask, index: int) -> Any:
    fmt = ask.json_format or {}
    schema = fmt.get("schema")
    if fmt.get("type") == "json_schema" and schema is not None:
        return sample(schema)
    return {"answer": _text(ask, index)}
