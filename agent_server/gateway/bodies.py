"""The request bodies of the relayed /v1 endpoints: what the gateway checks, and nothing it keeps.

Each body is a ``TypedDict`` validated in one pass from the raw bytes (``TypeAdapter.validate_json``,
strict: ``"stream": "yes"`` or ``"n": 1.5`` is a 400, as OpenAI answers). Only what the gateway
needs (model, stream, the usage option) and the types OpenAI itself rejects are declared; every
other field, known to OpenAI or not yet, is kept as sent (``extra="allow"``) and relayed unchanged.
Numbers are ``int | float`` so an integer stays an integer on its way upstream.

A failure raises pydantic's ``ValidationError``; the route turns it into a 400 naming the field.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal, NotRequired

from pydantic import AfterValidator, ConfigDict, Field, TypeAdapter, WithJsonSchema
from typing_extensions import TypedDict

from agent_server.llm.types import CHAT, COMPLETIONS, EMBEDDINGS, RESPONSES, Call

OPEN = ConfigDict(extra="allow", strict=True)
Number = int | float
Model = Annotated[str, Field(min_length=1, max_length=200)]
Text = Annotated[str, Field(max_length=1_000_000)]
MAX_ITEMS = 10_000


def _one_of(what: str, check: Callable[[Any], bool], schema: dict[str, Any]) -> Any:
    """A field that may take several shapes, checked in one function: its error names the field
    (a pydantic union would name each member it tried) and says what the shapes are."""

    def validate(value: Any) -> Any:
        if not check(value):
            raise ValueError(f"must be {what}")
        return value

    return Annotated[Any, AfterValidator(validate), WithJsonSchema(schema)]


def _strings(value: Any, most: int) -> bool:
    return type(value) is list and len(value) <= most and all(type(v) is str for v in value)


def _tokens(value: Any) -> bool:
    return type(value) is list and bool(value) and all(type(v) is int for v in value)


def _parts(value: Any) -> bool:
    return (
        type(value) is list
        and len(value) <= MAX_ITEMS
        and all(type(p) is dict and type(p.get("type")) is str for p in value)
    )


_STRING, _NULL = {"type": "string"}, {"type": "null"}
_PARTS = {"type": "array", "items": {"type": "object", "required": ["type"], "properties": {"type": _STRING}}}
_STRING_LIST = {"type": "array", "items": _STRING}
_TOKEN_LIST = {"type": "array", "items": {"type": "integer"}}
Content = _one_of(
    "a string, an array of content parts (objects with a 'type') or null",
    lambda v: v is None or type(v) is str or _parts(v),
    {"anyOf": [_STRING, _PARTS, _NULL]},
)
Stop = _one_of(
    "a string, an array of at most 4 strings or null",
    lambda v: v is None or type(v) is str or _strings(v, 4),
    {"anyOf": [_STRING, {**_STRING_LIST, "maxItems": 4}, _NULL]},
)
Prompt = _one_of(
    "a string, an array of strings, an array of token ids or an array of such arrays",
    lambda v: (
        type(v) is str or _strings(v, 2048) or _tokens(v) or (type(v) is list and all(_tokens(t) for t in v))
    ),
    {"anyOf": [_STRING, _STRING_LIST, _TOKEN_LIST, {"type": "array", "items": _TOKEN_LIST}]},
)
EmbeddingsInput = _one_of(
    "a non-empty string, an array of non-empty strings, an array of token ids or an array of such arrays",
    lambda v: (
        (type(v) is str and bool(v))
        or (_strings(v, 2048) and bool(v) and all(v))
        or _tokens(v)
        or (type(v) is list and 0 < len(v) <= 2048 and all(_tokens(t) for t in v))
    ),
    {"anyOf": [_STRING, _STRING_LIST, _TOKEN_LIST, {"type": "array", "items": _TOKEN_LIST}]},
)
ResponsesInput = _one_of(
    "a string or an array of input items (objects)",
    lambda v: type(v) is str or (type(v) is list and len(v) <= MAX_ITEMS and all(type(i) is dict for i in v)),
    {"anyOf": [_STRING, {"type": "array", "items": {"type": "object"}}]},
)
ToolChoice = _one_of(
    "a string ('none', 'auto', 'required') or an object naming a tool",
    lambda v: type(v) is str or type(v) is dict,
    {"anyOf": [_STRING, {"type": "object"}]},
)


class Message(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]
    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: NotRequired[Content]
    name: NotRequired[Annotated[str, Field(max_length=256)]]
    tool_call_id: NotRequired[Annotated[str, Field(max_length=256)]]


class StreamOptions(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]
    include_usage: NotRequired[bool | None]


class Tool(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]
    type: Annotated[str, Field(min_length=1, max_length=100)]


class ResponseFormat(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]
    type: Literal["text", "json_object", "json_schema"]


class _Sampling(TypedDict):
    """What every generating endpoint shares."""

    __pydantic_config__ = OPEN  # type: ignore[misc]
    model: Model
    stream: NotRequired[bool | None]
    stream_options: NotRequired[StreamOptions | None]
    temperature: NotRequired[Annotated[Number, Field(ge=0, le=2)] | None]
    top_p: NotRequired[Annotated[Number, Field(ge=0, le=1)] | None]
    user: NotRequired[Annotated[str, Field(max_length=256)]]
    metadata: NotRequired[Annotated[dict[str, str], Field(max_length=16)] | None]


class ChatBody(_Sampling):
    """``POST /v1/chat/completions``."""

    __pydantic_config__ = OPEN  # type: ignore[misc]
    messages: Annotated[list[Message], Field(min_length=1, max_length=MAX_ITEMS)]
    n: NotRequired[Annotated[int, Field(ge=1, le=128)] | None]
    max_tokens: NotRequired[Annotated[int, Field(ge=1)] | None]
    max_completion_tokens: NotRequired[Annotated[int, Field(ge=1)] | None]
    presence_penalty: NotRequired[Annotated[Number, Field(ge=-2, le=2)] | None]
    frequency_penalty: NotRequired[Annotated[Number, Field(ge=-2, le=2)] | None]
    logprobs: NotRequired[bool | None]
    top_logprobs: NotRequired[Annotated[int, Field(ge=0, le=20)] | None]
    seed: NotRequired[int | None]
    stop: NotRequired[Stop | None]
    tools: NotRequired[Annotated[list[Tool], Field(max_length=128)]]
    tool_choice: NotRequired[ToolChoice]
    parallel_tool_calls: NotRequired[bool]
    response_format: NotRequired[ResponseFormat]


class CompletionsBody(_Sampling):
    """``POST /v1/completions`` (legacy text completions)."""

    __pydantic_config__ = OPEN  # type: ignore[misc]
    prompt: Prompt
    n: NotRequired[Annotated[int, Field(ge=1, le=128)] | None]
    best_of: NotRequired[Annotated[int, Field(ge=0, le=20)] | None]
    max_tokens: NotRequired[Annotated[int, Field(ge=0)] | None]
    echo: NotRequired[bool | None]
    logprobs: NotRequired[Annotated[int, Field(ge=0, le=5)] | None]
    suffix: NotRequired[Text | None]
    stop: NotRequired[Stop | None]
    seed: NotRequired[int | None]


class EmbeddingsBody(TypedDict):
    """``POST /v1/embeddings``."""

    __pydantic_config__ = OPEN  # type: ignore[misc]
    model: Model
    input: EmbeddingsInput
    encoding_format: NotRequired[Literal["float", "base64"]]
    dimensions: NotRequired[Annotated[int, Field(ge=1, le=16_384)]]
    user: NotRequired[Annotated[str, Field(max_length=256)]]


class ResponsesBody(_Sampling):
    """``POST /v1/responses``."""

    __pydantic_config__ = OPEN  # type: ignore[misc]
    input: NotRequired[ResponsesInput]
    instructions: NotRequired[Text | None]
    max_output_tokens: NotRequired[Annotated[int, Field(ge=1)] | None]
    tools: NotRequired[Annotated[list[Tool], Field(max_length=128)]]
    tool_choice: NotRequired[ToolChoice]
    parallel_tool_calls: NotRequired[bool | None]
    text: NotRequired[dict[str, Any] | None]
    store: NotRequired[bool | None]
    previous_response_id: NotRequired[Annotated[str, Field(max_length=256)] | None]


BODIES: dict[str, TypeAdapter[Any]] = {
    CHAT: TypeAdapter(ChatBody),
    COMPLETIONS: TypeAdapter(CompletionsBody),
    EMBEDDINGS: TypeAdapter(EmbeddingsBody),
    RESPONSES: TypeAdapter(ResponsesBody),
}


def read_call(endpoint: str, raw: bytes, created: int) -> Call:
    """The call a body asks for; pydantic's ValidationError when the gateway must refuse it."""
    body: dict[str, Any] = BODIES[endpoint].validate_json(raw)
    stream = endpoint != EMBEDDINGS and body.get("stream") is True  # embeddings never stream
    options = body.get("stream_options")
    include_usage = stream and options is not None and options.get("include_usage") is True
    return Call(endpoint, body["model"], body, stream, include_usage, created)
