"""The mock's Responses API: the response object and its typed event stream.

Input is a string or a list of items (messages with ``input_text``/``input_image``/``input_file``
parts, ``function_call`` and ``function_call_output`` items), plus ``instructions``; tools are
function tools; ``text.format`` asks for JSON. The output is one ``message`` item with an
``output_text`` part, or one ``function_call`` item. Streams send the events OpenAI sends for them,
each with its ``sequence_number``, from ``response.created`` to ``response.completed`` (or
``response.incomplete`` when ``max_output_tokens`` cut the text).
"""

from __future__ import annotations

from typing import Any

from pydantic_core import to_json

from agent_server.llm.mock_reply import Ask, Reply, Tool, answer
from agent_server.llm.tokens import count_tokens, input_text
from agent_server.llm.types import Call, Chunk, Usage
from agent_server.llm.wire import new_id, sse


def responses_ask(call: Call) -> Ask:
    body = call.body
    messages: list[dict[str, Any]] = []
    if isinstance(body.get("instructions"), str):
        messages.append({"role": "system", "content": body["instructions"]})
    source = body.get("input")
    for item in [{"role": "user", "content": source}] if isinstance(source, str) else source or ():
        if not isinstance(item, dict):
            continue
        if item.get("type") == "function_call_output":
            messages.append({"role": "tool", "content": str(item.get("output", ""))})
        elif "role" in item:
            messages.append({"role": item["role"], "content": item.get("content")})
    tools = tuple(
        Tool(t["name"], t.get("parameters"))
        for t in body.get("tools") or ()
        if isinstance(t, dict) and t.get("type") == "function" and "name" in t
    )
    choice = body.get("tool_choice")
    if isinstance(choice, dict):
        choice = choice.get("name")
    fmt = (body.get("text") or {}).get("format") if isinstance(body.get("text"), dict) else None
    json_format = fmt if isinstance(fmt, dict) and fmt.get("type") in ("json_object", "json_schema") else None
    return Ask(call.model, messages, tools, choice, json_format, body.get("max_output_tokens"))


def _usage(call: Call, reply: Reply) -> Usage:
    body = call.body
    prompt = count_tokens(input_text(body.get("input")))
    if isinstance(body.get("instructions"), str):
        prompt += count_tokens(body["instructions"])
    return Usage(prompt, reply.tokens)


def _usage_object(usage: Usage) -> dict[str, Any]:
    return {
        "input_tokens": usage.prompt_tokens,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": usage.completion_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": usage.total_tokens,
    }


def _item(reply: Reply, item_id: str, status: str) -> dict[str, Any]:
    if reply.call is not None:
        return {
            "type": "function_call",
            "id": item_id,
            "call_id": reply.call["id"],
            "name": reply.call["name"],
            "arguments": reply.call["arguments"] if status != "in_progress" else "",
            "status": status,
        }
    # Finished (completed, or incomplete: cut by max_output_tokens) items keep the text produced.
    content = [_part(reply.content or "")] if status != "in_progress" else []
    return {"type": "message", "id": item_id, "status": status, "role": "assistant", "content": content}


def _part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def _response(call: Call, rid: str, reply: Reply, usage: Usage | None, item_id: str) -> dict[str, Any]:
    """The response object: in progress (no output yet) while ``usage`` is None, else finished."""
    body = call.body
    finished = usage is not None
    incomplete = finished and reply.finish == "length"
    status = "incomplete" if incomplete else "completed" if finished else "in_progress"
    return {
        "id": rid,
        "object": "response",
        "created_at": call.created,
        "status": status,
        "completed_at": call.created if status == "completed" else None,
        "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
        "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"),
        "model": call.model,
        "output": [_item(reply, item_id, "incomplete" if incomplete else "completed")] if finished else [],
        "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "previous_response_id": body.get("previous_response_id"),
        "reasoning": {"effort": None, "summary": None},
        "store": body.get("store", True),
        "temperature": body.get("temperature", 1.0),
        "text": body.get("text") or {"format": {"type": "text"}},
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools") or [],
        "top_p": body.get("top_p", 1.0),
        "truncation": body.get("truncation", "disabled"),
        "usage": _usage_object(usage) if usage is not None else None,
        "user": body.get("user"),
        "metadata": body.get("metadata") or {},
    }


def _ids(reply: Reply) -> tuple[str, str]:
    return new_id("resp_"), new_id("fc_" if reply.call is not None else "msg_")


def response_answer(call: Call) -> tuple[dict[str, Any], Usage]:
    reply = answer(responses_ask(call))
    usage = _usage(call, reply)
    rid, item_id = _ids(reply)
    return _response(call, rid, reply, usage, item_id), usage


def response_events(call: Call) -> list[Chunk]:
    reply = answer(responses_ask(call))
    usage = _usage(call, reply)
    rid, item_id = _ids(reply)
    events: list[tuple[str, dict[str, Any], str]] = []

    def add(kind: str, generated: str = "", **fields: Any) -> None:
        events.append((kind, fields, generated))  # ``generated``: the event's new text, for estimates

    opening = _response(call, rid, reply, None, item_id)
    add("response.created", response=opening)
    add("response.in_progress", response=opening)
    where = {"item_id": item_id, "output_index": 0}
    add("response.output_item.added", output_index=0, item=_item(reply, item_id, "in_progress"))
    final = _response(call, rid, reply, usage, item_id)
    if reply.call is None:
        add("response.content_part.added", **where, content_index=0, part=_part(""))
        for piece in reply.pieces:
            add("response.output_text.delta", piece, **where, content_index=0, delta=piece, logprobs=[])
        text = reply.content or ""
        add("response.output_text.done", **where, content_index=0, text=text, logprobs=[])
        add("response.content_part.done", **where, content_index=0, part=_part(text))
    else:
        for piece in reply.pieces:
            add("response.function_call_arguments.delta", **where, delta=piece)
        add("response.function_call_arguments.done", **where, arguments=reply.call["arguments"])
    add("response.output_item.done", output_index=0, item=final["output"][0])
    add("response.incomplete" if final["status"] == "incomplete" else "response.completed", response=final)
    out = []
    for number, (kind, fields, text) in enumerate(events):
        data = {"type": kind, "sequence_number": number, **fields}
        done = kind in ("response.completed", "response.incomplete")
        out.append(Chunk(sse(to_json(data), kind.encode()), data, usage if done else None, text))
    return out
