"""Token estimates: the mock's counts, and metering for an upstream that reports no usage.

An approximation (words and punctuation) that is stable across runs; prompts are read from any
request shape of the relay seam (chat messages with content parts, a completions prompt, Responses
input items, embeddings input).
"""

from __future__ import annotations

import re
from typing import Any

from agent_server.llm.types import CHAT, Call, Usage

_TOKEN = re.compile(r"\w+|[^\w\s]")
MESSAGE_FRAMING = 4  # tokens per chat message for its role framing


def count_tokens(text: str) -> int:
    return len(_TOKEN.findall(text))


def truncate(text: str, limit: int) -> str:
    """The longest prefix of ``text`` with at most ``limit`` tokens: a cut answer is the start of
    the whole one, as a model's answer cut by ``max_tokens`` is, its spacing and punctuation kept."""
    if limit <= 0:
        return ""
    for number, token in enumerate(_TOKEN.finditer(text), 1):
        if number == limit:
            return text[: token.end()]
    return text


def text_of(content: Any) -> str:
    """The text of a message's content: a string, or the text of its parts (other parts skipped)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(
            part["text"] for part in content if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return ""


def messages_tokens(messages: Any) -> int:
    if not isinstance(messages, list):
        return 0
    return sum(
        count_tokens(text_of(m.get("content"))) + MESSAGE_FRAMING for m in messages if isinstance(m, dict)
    )


def input_text(value: Any) -> str:
    """A completions prompt, an embeddings input or a Responses input, as text.

    Strings and lists of strings are read; token-id arrays count one token per id (as spaces);
    Responses input items are messages whose content is a string or parts.
    """
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        return ""
    pieces: list[str] = []
    for item in value:
        if isinstance(item, str):
            pieces.append(item)
        elif isinstance(item, int):
            pieces.append("0")
        elif isinstance(item, list):
            pieces.append(input_text(item))
        elif isinstance(item, dict):
            pieces.append(text_of(item.get("content")) or str(item.get("output") or ""))
    return " ".join(pieces)


def prompt_tokens(call: Call) -> int:
    body = call.body
    if call.endpoint == CHAT:
        return messages_tokens(body.get("messages"))
    source = body.get("prompt", body.get("input"))
    instructions = body.get("instructions")
    extra = count_tokens(instructions) if isinstance(instructions, str) else 0
    return count_tokens(input_text(source)) + extra


def estimate(call: Call, generated: str) -> Usage:
    """The usage of a call whose upstream reported none: the prompt and the generated text."""
    return Usage(prompt_tokens(call), count_tokens(generated))
