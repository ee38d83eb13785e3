"""The mock's chat completions: the JSON answer and its event stream, as OpenAI shapes them.

``n`` choices, tool calls (and the legacy ``functions``/``function_call``), JSON mode and JSON
schemas, ``logprobs`` with ``top_logprobs`` (deterministic values), token limits and stop
sequences; what the mock says is decided in ``mock_reply.py``.
"""

from __future__ import annotations

import zlib
from typing import Any

from pydantic_core import to_json

from agent_server.llm.mock_reply import Ask, Reply, Tool, answer
from agent_server.llm.tokens import messages_tokens
from agent_server.llm.types import Call, Chunk, Usage
from agent_server.llm.wire import chunk_dict, completion_id, sse

FINGERPRINT = "fp_agentgate_mock"
# Alternatives of a token for top_logprobs (up to 20, as OpenAI allows): the token, then variants.
_SUFFIXES = ("s", "ed", "ing", "er", "ly", "y", "es", "al", "ment", "ness", *"0123456789")


def chat_ask(call: Call) -> Ask:
    body = call.body
    tools = tuple(
        Tool(t["function"]["name"], t["function"].get("parameters"))
        for t in body.get("tools") or ()
        if isinstance(t, dict) and isinstance(t.get("function"), dict) and "name" in t["function"]
    ) or tuple(
        Tool(f["name"], f.get("parameters"))
        for f in body.get("functions") or ()
        if isinstance(f, dict) and "name" in f
    )
    choice = body.get("tool_choice", body.get("function_call"))
    if isinstance(choice, dict):
        choice = (choice.get("function") or choice).get("name")
    fmt = body.get("response_format")
    json_format = None
    if isinstance(fmt, dict) and fmt.get("type") == "json_object":
        json_format = {"type": "json_object"}
    elif isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        json_format = {"type": "json_schema", "schema": (fmt.get("json_schema") or {}).get("schema")}
    stop = body.get("stop")
    return Ask(
        call.model,
        body.get("messages") or [],
        tools,
        choice,
        json_format,
        body.get("max_completion_tokens") or body.get("max_tokens"),
        (stop,) if isinstance(stop, str) else tuple(s for s in stop or () if isinstance(s, str)),
    )


def _replies(call: Call) -> tuple[list[Reply], Usage]:
    n = call.body.get("n") or 1
    replies = [answer(chat_ask(call), index) for index in range(n)]
    return replies, Usage(messages_tokens(call.body.get("messages")), sum(r.tokens for r in replies))


def _legacy(call: Call) -> bool:
    """The deprecated ``functions`` API: the call is a ``function_call``, not ``tool_calls``."""
    return bool(call.body.get("functions")) and not call.body.get("tools")


def usage_object(usage: Usage) -> dict[str, Any]:
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def chat_answer(call: Call) -> tuple[dict[str, Any], Usage]:
    replies, usage = _replies(call)
    legacy, logprobs = _legacy(call), call.body.get("logprobs") is True
    choices = []
    for index, reply in enumerate(replies):
        message: dict[str, Any] = {
            "role": "assistant",
            "content": reply.content,
            "refusal": None,
            "annotations": [],
        }
        finish = reply.finish
        if reply.call is not None:
            function = {"name": reply.call["name"], "arguments": reply.call["arguments"]}
            if legacy:
                message["function_call"], finish = function, "function_call"
            else:
                message["tool_calls"] = [{"id": reply.call["id"], "type": "function", "function": function}]
        choices.append(
            {
                "index": index,
                "message": message,
                "logprobs": _logprobs(call, reply.pieces if reply.content else None) if logprobs else None,
                "finish_reason": finish,
                **({"stop_reason": reply.stop} if reply.stop else {}),
            }
        )
    data = {
        "id": completion_id(),
        "object": "chat.completion",
        "created": call.created,
        "model": call.model,
        "choices": choices,
        "usage": usage_object(usage),
        "service_tier": "default",
        "system_fingerprint": FINGERPRINT,
    }
    return data, usage


def chat_chunks(call: Call) -> list[Chunk]:
    """Per choice: the role, the content (or the call's arguments) piece by piece, the finish; then
    the usage chunk (sent only when the client asked for it)."""
    replies, usage = _replies(call)
    cid, legacy, logprobs = completion_id(), _legacy(call), call.body.get("logprobs") is True
    out: list[Chunk] = []

    def emit(
        index: int, delta: dict[str, Any], finish: str | None = None, text: str = "", stop: str | None = None
    ) -> None:
        choice = {"index": index, "delta": delta, "logprobs": None, "finish_reason": finish}
        if stop:
            choice["stop_reason"] = stop
        if logprobs and text:
            choice["logprobs"] = _logprobs(call, [text])
        data = {**chunk_dict(cid, call.created, call.model, [choice]), "system_fingerprint": FINGERPRINT}
        out.append(Chunk(sse(to_json(data)), data, None, text))

    for index, reply in enumerate(replies):
        emit(index, {"role": "assistant", "content": "" if reply.call is None else None})
        if reply.call is None:
            for piece in reply.pieces:
                emit(index, {"content": piece}, text=piece)
        else:
            emit(index, _call_delta(reply.call, legacy, first=True))
            for piece in reply.pieces:
                emit(index, _call_delta({"arguments": piece}, legacy, first=False))
        emit(index, {}, "function_call" if legacy and reply.call else reply.finish, stop=reply.stop)
    data = {**chunk_dict(cid, call.created, call.model, []), "usage": usage_object(usage)}
    out.append(Chunk(sse(to_json(data)) if call.include_usage else b"", data, usage))
    return out


def _call_delta(call: dict[str, str], legacy: bool, *, first: bool) -> dict[str, Any]:
    function = {"name": call["name"], "arguments": ""} if first else {"arguments": call["arguments"]}
    if legacy:
        return {"function_call": function}
    fragment: dict[str, Any] = {"index": 0, "function": function}
    if first:
        fragment.update(id=call["id"], type="function")
    return {"tool_calls": [fragment]}


def _logprobs(call: Call, pieces: list[str] | None) -> dict[str, Any]:
    """Deterministic log probabilities of ``pieces``, with ``top_logprobs`` alternatives each."""
    top = call.body.get("top_logprobs") or 0
    if pieces is None:
        return {"content": None, "refusal": None}
    content = []
    for piece in pieces:
        value = -round((zlib.crc32(piece.encode()) % 2000) / 1000, 3)
        options = [piece, *(piece.strip() + suffix for suffix in _SUFFIXES)][: min(top, 20)]
        content.append(
            {
                "token": piece,
                "logprob": value,
                "bytes": list(piece.encode()),
                "top_logprobs": [
                    {"token": option, "logprob": round(value - rank, 3), "bytes": list(option.encode())}
                    for rank, option in enumerate(options)
                ],
            }
        )
    return {"content": content, "refusal": None}
