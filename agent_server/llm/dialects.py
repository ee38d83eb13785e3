"""What the relay reads in each endpoint's answers and stream events, and nothing more.

The relay passes bodies through as bytes; it parses them only for what the gateway needs: the usage
to meter, the model id to replace, errors sent in-band, whether a stream has begun its content
(until then a failed upstream can still be replaced by the next one) and whether it finished.
"""

from __future__ import annotations

from typing import Any

from pydantic_core import to_json

from agent_server.llm.types import CHAT, COMPLETIONS, EMBEDDINGS, RESPONSES, Call, Usage
from agent_server.llm.wire import sse, usage_json

Data = dict[str, Any]
# Responses API events that open a stream without content yet.
_OPENING = frozenset({"response.created", "response.in_progress", "response.queued"})
_TERMINAL = frozenset({"response.completed", "response.incomplete", "response.failed"})


def _int(value: Any) -> int:
    return value if type(value) is int else 0


class ChoicesDialect:
    """Chat completions and legacy completions: ``choices`` with a delta or a text, and ``usage``."""

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint
        self._chat = endpoint == CHAT

    def swap_model(self, data: Data, public: str) -> Any:
        """Put ``public`` in as the model; return the upstream's own value."""
        found = data.get("model")
        data["model"] = public
        return found

    def usage(self, data: Data) -> Usage | None:
        raw = data.get("usage")
        if type(raw) is not dict or "prompt_tokens" not in raw:
            return None
        return Usage(_int(raw["prompt_tokens"]), _int(raw.get("completion_tokens")))

    def failed(self, data: Data) -> bool:
        return bool(data.get("error")) and not data.get("choices") and not data.get("data")

    def is_error_event(self, event: bytes | None, data: Data) -> bool:
        return event == b"error" or bool(data.get("error"))

    def inspect(self, data: Data) -> tuple[bool, bool, str]:
        """(begins content, finishes, generated text) of one stream event."""
        choices = data.get("choices")
        if not choices:
            return False, False, ""
        content, finished, text = False, False, ""
        for choice in choices:
            if choice.get("finish_reason"):
                finished = True
            if self._chat:
                delta = choice.get("delta")
                if delta:
                    piece = delta.get("content")
                    if piece:
                        text += piece
                        content = True
                    elif len(delta) > 1 or "role" not in delta:
                        # tool calls, refusal, audio, reasoning...: anything but the role opening
                        content = content or any(v for k, v in delta.items() if k != "role")
            else:
                piece = choice.get("text")
                if piece:
                    text += piece
                    content = True
        return content or finished, finished, text

    def usage_only(self, data: Data) -> bool:
        return not data.get("choices")

    def answer_text(self, data: Data) -> str:
        pieces: list[str] = []
        for choice in data.get("choices") or ():
            value = (choice.get("message") or {}).get("content") if self._chat else choice.get("text")
            if isinstance(value, str):
                pieces.append(value)
        return " ".join(pieces)

    def usage_event(self, call: Call, last: Data | None, usage: Usage) -> bytes:
        """The usage chunk of a stream whose upstream sent none (the client asked for it)."""
        last = last or {}
        kind = "chat.completion.chunk" if self._chat else "text_completion"
        chunk = {
            "id": last.get("id", ""),
            "object": last.get("object", kind),
            "created": last.get("created", call.created),
            "model": call.model,
            "choices": [],
            "usage": usage_json(usage),
        }
        return sse(to_json(chunk))


class ResponsesDialect:
    """The Responses API: a response object, or typed events that carry it at start and end."""

    endpoint = RESPONSES

    def swap_model(self, data: Data, public: str) -> Any:
        target = data.get("response") if "response" in data else data
        if type(target) is not dict or "model" not in target:
            return public
        found = target["model"]
        target["model"] = public
        return found

    def usage(self, data: Data) -> Usage | None:
        response = data.get("response", data)
        raw = response.get("usage") if type(response) is dict else None
        if type(raw) is not dict or "input_tokens" not in raw:
            return None
        return Usage(_int(raw["input_tokens"]), _int(raw.get("output_tokens")))

    def failed(self, data: Data) -> bool:
        return bool(data.get("error")) and data.get("object") != "response"

    def is_error_event(self, event: bytes | None, data: Data) -> bool:
        return event == b"error" or data.get("type") == "error"

    def inspect(self, data: Data) -> tuple[bool, bool, str]:
        kind = data.get("type")
        if kind == "response.output_text.delta":
            delta = data.get("delta")
            return True, False, delta if isinstance(delta, str) else ""
        if kind in _TERMINAL:
            return True, True, ""
        return kind not in _OPENING and not str(kind).endswith(".added"), False, ""

    def usage_only(self, data: Data) -> bool:
        return False

    def answer_text(self, data: Data) -> str:
        return " ".join(
            part.get("text", "")
            for item in data.get("output") or ()
            if type(item) is dict
            for part in item.get("content") or ()
            if type(part) is dict and part.get("type") == "output_text"
        )

    def usage_event(self, call: Call, last: Data | None, usage: Usage) -> bytes:
        return b""  # the final response event carries the usage; there is no usage-only event


class EmbeddingsDialect(ChoicesDialect):
    def usage(self, data: Data) -> Usage | None:
        raw = data.get("usage")
        if type(raw) is not dict or "prompt_tokens" not in raw:
            return None
        return Usage(_int(raw["prompt_tokens"]), 0)


Dialect = ChoicesDialect | ResponsesDialect
DIALECTS: dict[str, Dialect] = {
    CHAT: ChoicesDialect(CHAT),
    COMPLETIONS: ChoicesDialect(COMPLETIONS),
    EMBEDDINGS: EmbeddingsDialect(EMBEDDINGS),
    RESPONSES: ResponsesDialect(),
}
