"""The OpenAI wire format as bytes (reference/standards.md section 11): ids, server-sent events,
the model-id rewrite of relayed answers, and the chat objects of typed backends.

Relayed answers are not rendered at all: the upstream's bytes pass with only the model id
replaced. What the gateway does render (a typed backend's answer, the mock's) is built as a dict
and serialised by ``pydantic_core.to_json`` (about six times faster than ``json.dumps`` here).
"""

from __future__ import annotations

import random
from typing import Any

from pydantic_core import to_json

from agent_server.llm.types import Completion, Usage

DONE = b"data: [DONE]\n\n"
_ids = random.Random()  # identifiers, not secrets: no system call per request


def new_id(prefix: str) -> str:
    return f"{prefix}{_ids.getrandbits(96):024x}"


def completion_id() -> str:
    return new_id("chatcmpl-")


def sse(data: bytes, event: bytes | None = None) -> bytes:
    """One server-sent event; ``event`` names it (the Responses API's typed events)."""
    if event is None:
        return b"data: " + data + b"\n\n"
    return b"event: " + event + b"\ndata: " + data + b"\n\n"


def usage_json(usage: Usage) -> dict[str, int]:
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens,
    }


class ModelRewriter:
    """Puts the public model id into relayed bytes in place of the upstream's (one answer or stream).

    The key and value are replaced in the bytes (compact, or with one space, as JSON encoders write
    them); a body in any other spelling is re-serialised from its parsed form, whose model the
    caller has already replaced.
    """

    __slots__ = ("_found", "_needles", "_new", "_public")

    def __init__(self, public: str) -> None:
        self._public = public
        self._new = b'"model":' + to_json(public)
        self._found: str | None = None
        self._needles: tuple[bytes, ...] = ()

    def __call__(self, raw: bytes, data: dict[str, Any], found: object) -> bytes:
        if type(found) is not str or found == self._public:
            return raw
        if found != self._found:  # once per stream: every event names the same model
            value = to_json(found)
            self._found, self._needles = found, (b'"model":' + value, b'"model": ' + value)
        for needle in self._needles:
            if needle in raw:
                return raw.replace(needle, self._new, 1)
        return to_json(data)


def completion_dict(cid: str, created: int, completion: Completion) -> dict[str, Any]:
    """The chat.completion object of a typed backend's answer (choice 0 only)."""
    message: dict[str, Any] = {"role": "assistant", "content": completion.content, "refusal": None}
    if completion.tool_calls:
        # As OpenAI does: a message that only calls tools has null content.
        message["content"] = completion.content or None
        message["tool_calls"] = completion.tool_calls
    return {
        "id": cid,
        "object": "chat.completion",
        "created": created,
        "model": completion.model,
        "choices": [
            {"index": 0, "message": message, "logprobs": None, "finish_reason": completion.finish_reason}
        ],
        "usage": usage_json(completion.usage),
    }


def completion_body(cid: str, created: int, completion: Completion) -> bytes:
    return to_json(completion_dict(cid, created, completion))


def chunk_dict(cid: str, created: int, model: str, choices: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": cid,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "choices": choices,
    }
