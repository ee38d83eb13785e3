"""A chat completion as the Messages API's answer: content blocks, stop reason and usage.

``message_of`` reads choice 0 of a chat answer (what ``anthropic_translate.chat_body`` asked for);
``stop_of``, ``usage_json`` and the rest are shared with the stream's events (``anthropic_stream.py``).
"""

from __future__ import annotations

from typing import Any

from pydantic_core import from_json

from agent_server.foundation.errors import UpstreamFailed
from agent_server.llm.types import Usage
from agent_server.llm.wire import new_id

Data = dict[str, Any]


def stop_of(finish: object, matched: object, stops: tuple[str, ...], called: bool) -> tuple[str, str | None]:
    """(stop_reason, stop_sequence) of a chat finish_reason. Chat completions do not say which stop
    sequence matched; servers that do (``stop_reason`` as vLLM and the mock send it, SGLang's
    ``matched_stop``) get ``stop_sequence``, the others ``end_turn``."""
    if finish in ("tool_calls", "function_call") or (called and finish in (None, "stop")):
        return "tool_use", None
    if finish == "length":
        return "max_tokens", None
    if finish == "content_filter":
        return "refusal", None
    if type(matched) is str and matched in stops:
        return "stop_sequence", matched
    return "end_turn", None


def matched_stop(choice: Data) -> object:
    return choice.get("stop_reason", choice.get("matched_stop"))


def tool_input(arguments: object) -> Data:
    """A tool call's JSON arguments as the object a tool_use block carries."""
    if arguments in (None, ""):
        return {}
    try:
        value = from_json(arguments) if type(arguments) is str else arguments
    except ValueError:
        value = None
    if type(value) is not dict:
        raise UpstreamFailed("the upstream model called a tool with arguments that are no JSON object")
    return value


def usage_json(usage: Usage, cached: int = 0) -> Data:
    """Anthropic's usage: input tokens exclude those read from a cache (chat's prompt count includes them)."""
    return {
        "input_tokens": max(0, usage.prompt_tokens - cached),
        "output_tokens": usage.completion_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": cached,
    }


def cached_tokens(data: Data) -> int:
    """The prompt tokens a chat answer (or usage chunk) says were read from the upstream's cache."""
    details = (data.get("usage") or {}).get("prompt_tokens_details")
    cached = details.get("cached_tokens") if type(details) is dict else 0
    return cached if type(cached) is int else 0


def message_of(data: Data, model: str, stops: tuple[str, ...], usage: Usage) -> Data:
    """The Message of a chat completion's first choice."""
    choices = data.get("choices")
    choice = choices[0] if type(choices) is list and choices else None
    if type(choice) is not dict:
        raise UpstreamFailed("the upstream answered without a choice")
    message = choice.get("message") or {}
    content: list[Data] = []
    text = message.get("content")
    if type(text) is list:  # a few servers answer in parts
        text = "".join(p.get("text", "") for p in text if type(p) is dict)
    text = text or message.get("refusal")
    if type(text) is str and text:
        content.append({"type": "text", "text": text})
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        block_id = call.get("id") or new_id("toolu_")
        name = function.get("name") or ""
        content.append(
            {"type": "tool_use", "id": block_id, "name": name, "input": tool_input(function.get("arguments"))}
        )
    called = any(block["type"] == "tool_use" for block in content)
    stop_reason, sequence = stop_of(choice.get("finish_reason"), matched_stop(choice), stops, called)
    return {
        "id": new_id("msg_"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": sequence,
        "usage": usage_json(usage, cached_tokens(data)),
    }
