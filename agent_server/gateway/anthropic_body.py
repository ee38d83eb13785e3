"""The request bodies of ``POST /v1/messages`` and ``/v1/messages/count_tokens``: what the gateway checks.

As Anthropic's API requires: ``model``, ``max_tokens`` (an integer of at least 1; not for counting)
and ``messages`` (``user`` and ``assistant`` turns whose content is a string or content blocks with
a ``type``); ``system``, ``stop_sequences``, ``stream``, ``temperature`` (0-1), ``top_p`` (0-1),
``top_k``, ``metadata.user_id``, ``tools`` and ``tool_choice`` are checked when present. Types are
strict, as in ``bodies.py``. Every other field is kept as sent: unchanged to an Anthropic-compatible
upstream, translated or dropped for the others (``llm/anthropic_translate.py``).

A failure raises pydantic's ``ValidationError``; the route turns it into a 400 naming the field.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Annotated, Any, Literal, NotRequired

from pydantic import AfterValidator, ConfigDict, Field, TypeAdapter, WithJsonSchema
from typing_extensions import TypedDict

from agent_server.foundation.errors import ValidationFailed
from agent_server.llm.anthropic_translate import MESSAGES
from agent_server.llm.types import Call, RawHeaders

OPEN = ConfigDict(extra="allow", strict=True)
MAX_ITEMS = 10_000
Number = int | float
Fraction = Annotated[Number, Field(ge=0, le=1)]
Short = Annotated[str, Field(max_length=256)]


def _blocks(value: Any) -> bool:
    return (
        type(value) is list
        and len(value) <= MAX_ITEMS
        and all(type(b) is dict and type(b.get("type")) is str for b in value)
    )


def _check_content(value: Any) -> Any:
    if type(value) is not str and not _blocks(value):
        raise ValueError("must be a string or an array of content blocks (objects with a 'type')")
    return value


_BLOCKS = {
    "type": "array",
    "items": {"type": "object", "required": ["type"], "properties": {"type": {"type": "string"}}},
}
# One check with one message (a pydantic union would report each member it tried).
Content = Annotated[
    Any, AfterValidator(_check_content), WithJsonSchema({"anyOf": [{"type": "string"}, _BLOCKS]})
]


class Turn(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]
    role: Literal["user", "assistant"]
    content: Content


class Tool(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]
    name: Annotated[str, Field(min_length=1, max_length=128)]
    input_schema: NotRequired[dict[str, Any]]
    description: NotRequired[Annotated[str, Field(max_length=100_000)]]


class ToolChoice(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]
    type: Literal["auto", "any", "tool", "none"]
    name: NotRequired[Annotated[str, Field(min_length=1, max_length=128)]]
    disable_parallel_tool_use: NotRequired[bool]


class Metadata(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]
    user_id: NotRequired[Short | None]


class CountBody(TypedDict):
    """``POST /v1/messages/count_tokens``."""

    __pydantic_config__ = OPEN  # type: ignore[misc]
    model: Annotated[str, Field(min_length=1, max_length=200)]
    messages: Annotated[list[Turn], Field(min_length=1, max_length=MAX_ITEMS)]
    system: NotRequired[Content]
    tools: NotRequired[Annotated[list[Tool], Field(max_length=128)]]
    tool_choice: NotRequired[ToolChoice]


class MessagesBody(CountBody):
    """``POST /v1/messages``."""

    __pydantic_config__ = OPEN  # type: ignore[misc]
    max_tokens: Annotated[int, Field(ge=1)]
    stop_sequences: NotRequired[Annotated[list[Annotated[str, Field(max_length=1000)]], Field(max_length=64)]]
    stream: NotRequired[bool]
    temperature: NotRequired[Fraction]
    top_p: NotRequired[Fraction]
    top_k: NotRequired[Annotated[int, Field(ge=0)]]
    metadata: NotRequired[Metadata]


MESSAGES_BODY: TypeAdapter[Any] = TypeAdapter(MessagesBody)
COUNT_BODY: TypeAdapter[Any] = TypeAdapter(CountBody)


def read_messages_call(raw: bytes, created: int) -> Call:
    """The call a Messages body asks for; pydantic's ValidationError when the gateway must refuse it."""
    body: dict[str, Any] = MESSAGES_BODY.validate_json(raw)
    return Call(MESSAGES, body["model"], body, body.get("stream") is True, False, created)


def read_count_body(raw: bytes) -> dict[str, Any]:
    return COUNT_BODY.validate_json(raw)


# What a native upstream gets of the client's head: beta feature names (comma-separated tokens;
# several such headers are joined, as HTTP allows) and the API version (a date).
# The same patterns are the OpenAPI document's (routes/gateway_messages.py).
BETA_PATTERN = "[A-Za-z0-9._-]+(?: *, *[A-Za-z0-9._-]+)*"
VERSION_PATTERN = "[0-9]{4}-[0-9]{2}-[0-9]{2}"
MAX_HEADER = 1000
_PASSED = {
    b"anthropic-beta": re.compile(BETA_PATTERN.encode()),
    b"anthropic-version": re.compile(VERSION_PATTERN.encode()),
}


def passed_headers(head: Iterable[tuple[bytes, bytes]]) -> RawHeaders:
    """``anthropic-beta`` and ``anthropic-version`` of a request, checked; a 400 when malformed."""
    found: dict[bytes, list[bytes]] = {}
    for name, value in head:
        if name in _PASSED:
            found.setdefault(name, []).append(value.strip())
    passed = []
    for name, values in found.items():
        value = b",".join(values)
        if (
            len(value) > MAX_HEADER
            or not _PASSED[name].fullmatch(value)
            or (name == b"anthropic-version" and len(values) > 1)
        ):
            raise ValidationFailed(
                f"Header {name.decode()} is malformed: "
                + ("comma-separated beta names." if name == b"anthropic-beta" else "one date, YYYY-MM-DD."),
                param=name.decode(),
            )
        passed.append((name, value))
    return tuple(passed)
