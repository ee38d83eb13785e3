"""A Messages API request as chat completions (reference/standards.md sections 11 and 12).

``chat_body`` turns a Messages request into the chat-completions request that an OpenAI-compatible
upstream (or the mock) answers; ``anthropic_answer.py`` turns the answer back into a Message. What
has no chat equivalent is dropped (``top_k``, ``thinking`` and earlier thinking blocks,
``cache_control``, ``service_tier``); what cannot be honoured at all (server tools, content blocks
only Anthropic serves, more than four stop sequences) is a 400 naming the field. The body arrives
checked by ``gateway/anthropic_body.py``; blocks are read defensively all the same.
"""

from __future__ import annotations

from typing import Any

from pydantic_core import to_json

from agent_server.foundation.errors import ValidationFailed
from agent_server.llm.tokens import MESSAGE_FRAMING, count_tokens, messages_tokens, text_of

MESSAGES = "messages"  # the relay endpoint of the Messages API: its path under an upstream's base URL
MAX_STOP_SEQUENCES = 4  # what chat completions accept
Data = dict[str, Any]
_CHOICES = {"auto": "auto", "any": "required", "none": "none"}


def _refuse(message: str, param: str) -> ValidationFailed:
    return ValidationFailed(message, param=param)


def _string(block: Data, field: str, at: str) -> str:
    value = block.get(field)
    if type(value) is not str:
        raise _refuse(f"'{at}.{field}' must be a string.", f"{at}.{field}")
    return value


def _untranslatable(kind: object, at: str) -> ValidationFailed:
    return _refuse(
        f"Content blocks of type '{kind}' cannot reach this model: it is served through chat "
        "completions, which have text, image, document, tool_use and tool_result blocks only.",
        f"{at}.type",
    )


def _system_text(system: Any) -> str:
    if type(system) is str:
        return system
    return "\n".join(_string(block, "text", f"system.{i}") for i, block in enumerate(system))


def _part(block: Data, at: str) -> Data:
    """A user content block as a chat content part."""
    kind = block.get("type")
    if kind == "text":
        return {"type": "text", "text": _string(block, "text", at)}
    source = block.get("source")
    source_type = source.get("type") if type(source) is dict else None
    if kind == "image" and source_type == "base64":
        media = _string(source, "media_type", f"{at}.source")  # type: ignore[arg-type]
        url = f"data:{media};base64,{_string(source, 'data', f'{at}.source')}"  # type: ignore[arg-type]
        return {"type": "image_url", "image_url": {"url": url}}
    if kind == "image" and source_type == "url":
        return {"type": "image_url", "image_url": {"url": _string(source, "url", f"{at}.source")}}  # type: ignore[arg-type]
    if kind == "document" and source_type == "base64":
        media = _string(source, "media_type", f"{at}.source")  # type: ignore[arg-type]
        data = f"data:{media};base64,{_string(source, 'data', f'{at}.source')}"  # type: ignore[arg-type]
        title = block.get("title")
        return {
            "type": "file",
            "file": {"filename": title if type(title) is str else "document", "file_data": data},
        }
    if kind == "document" and source_type == "text":
        return {"type": "text", "text": _string(source, "data", f"{at}.source")}  # type: ignore[arg-type]
    if kind in ("image", "document"):
        raise _refuse(
            f"This {kind} source cannot reach this model (base64 or url images, base64 or text documents).",
            f"{at}.source",
        )
    raise _untranslatable(kind, at)


def _parts_content(parts: list[Data]) -> str | list[Data]:
    if len(parts) == 1 and parts[0]["type"] == "text":
        return parts[0]["text"]  # a plain string: what every chat server reads
    return parts


def _tool_result(block: Data, at: str, parts: list[Data]) -> Data:
    """A tool message; images of the result go to the user message that follows it."""
    content = block.get("content")
    texts: list[str] = []
    if type(content) is str:
        texts.append(content)
    elif type(content) is list:
        for k, item in enumerate(content):
            piece = _part(item, f"{at}.content.{k}") if type(item) is dict else None
            if piece is None:
                raise _refuse(f"'{at}.content.{k}' must be a content block.", f"{at}.content.{k}")
            if piece["type"] == "text":
                texts.append(piece["text"])
            else:
                parts.append(piece)
    text = "\n".join(texts)
    if block.get("is_error") is True:
        text = f"Error: {text}"  # chat completions have no error flag on tool results
    return {"role": "tool", "tool_call_id": _string(block, "tool_use_id", at), "content": text}


def _user(content: Any, where: str) -> list[Data]:
    if type(content) is str:
        return [{"role": "user", "content": content}]
    out: list[Data] = []
    parts: list[Data] = []
    for j, block in enumerate(content):
        at = f"{where}.{j}"
        if block.get("type") == "tool_result":
            out.append(_tool_result(block, at, parts))  # tool messages first, as chat requires
        else:
            parts.append(_part(block, at))
    if parts or not out:
        out.append({"role": "user", "content": _parts_content(parts) if parts else ""})
    return out


def _assistant(content: Any, where: str) -> Data:
    if type(content) is str:
        return {"role": "assistant", "content": content}
    texts: list[str] = []
    calls: list[Data] = []
    for j, block in enumerate(content):
        kind, at = block.get("type"), f"{where}.{j}"
        if kind == "text":
            texts.append(_string(block, "text", at))
        elif kind == "tool_use":
            arguments = to_json(block.get("input") or {}).decode()
            function = {"name": _string(block, "name", at), "arguments": arguments}
            calls.append({"id": _string(block, "id", at), "type": "function", "function": function})
        elif kind not in ("thinking", "redacted_thinking"):  # earlier reasoning has no chat form
            raise _untranslatable(kind, at)
    message: Data = {"role": "assistant", "content": "".join(texts) if texts or not calls else None}
    if calls:
        message["tool_calls"] = calls
    return message


def _tool(tool: Data, at: str) -> Data:
    kind = tool.get("type")
    if kind not in (None, "custom"):
        raise _refuse(
            f"The tool type '{kind}' runs on Anthropic's own servers; this model is served through "
            "chat completions, which take custom tools (name, description, input_schema) only.",
            f"{at}.type",
        )
    function: Data = {
        "name": _string(tool, "name", at),
        "parameters": tool.get("input_schema") or {"type": "object"},
    }
    if type(tool.get("description")) is str:
        function["description"] = tool["description"]
    if tool.get("strict") is True:
        function["strict"] = True
    return {"type": "function", "function": function}


def _tool_choice(choice: Data, chat: Data) -> None:
    kind = choice.get("type")
    if kind == "tool":
        chat["tool_choice"] = {
            "type": "function",
            "function": {"name": _string(choice, "name", "tool_choice")},
        }
    elif kind in _CHOICES:
        chat["tool_choice"] = _CHOICES[kind]
    if choice.get("disable_parallel_tool_use") is True:
        chat["parallel_tool_calls"] = False


def chat_body(body: Data) -> Data:
    """The chat-completions request of a Messages request (the public model id kept)."""
    messages: list[Data] = []
    system = body.get("system")
    if system:
        messages.append({"role": "system", "content": _system_text(system)})
    for i, turn in enumerate(body["messages"]):
        where = f"messages.{i}.content"
        if turn["role"] == "assistant":
            messages.append(_assistant(turn["content"], where))
        else:
            messages += _user(turn["content"], where)
    chat: Data = {"model": body["model"], "messages": messages, "max_tokens": body["max_tokens"]}
    for name in ("temperature", "top_p"):
        if body.get(name) is not None:
            chat[name] = body[name]
    stops = body.get("stop_sequences")
    if stops:
        if len(stops) > MAX_STOP_SEQUENCES:
            raise _refuse(
                f"This model is served through chat completions, which take at most {MAX_STOP_SEQUENCES} stop sequences.",
                "stop_sequences",
            )
        chat["stop"] = list(stops)
    if body.get("stream") is True:
        chat["stream"] = True
    tools = body.get("tools")
    if tools:
        chat["tools"] = [_tool(tool, f"tools.{i}") for i, tool in enumerate(tools)]
        if type(body.get("tool_choice")) is dict:
            _tool_choice(body["tool_choice"], chat)
    user = (body.get("metadata") or {}).get("user_id")
    if type(user) is str:
        chat["user"] = user
    return chat


def prompt_tokens(body: Data) -> int:
    """The estimate of a Messages request's input tokens: what the mock counts for its translation,
    or, for blocks that have none, the text of every block."""
    try:
        return messages_tokens(chat_body({**body, "max_tokens": 1})["messages"])
    except ValidationFailed:
        pass
    turns = [body.get("system"), *(turn.get("content") for turn in body.get("messages") or ())]
    return sum(count_tokens(text_of(content)) + MESSAGE_FRAMING for content in turns if content)
