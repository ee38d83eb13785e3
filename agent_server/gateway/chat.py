"""The OpenAI chat-completions wire format (reference/standards.md section 11): body and SSE chunks.

Chunks are rendered from a per-stream prefix plus one ``json.dumps`` of the piece of text, so a
delta costs one small string concatenation rather than building and serialising a nested dict.

A stream that fails after it started (status 200 already sent) ends with an in-band error chunk in
the gateway envelope and then ``data: [DONE]``: clients see the failure and never hang.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from agent_server.errors import AgentError, gateway_envelope
from agent_server.llm.mock import count_tokens
from agent_server.llm.types import ChatRequest, Completion, Delta, Usage

log = logging.getLogger("agentgate.gateway")
DONE = b"data: [DONE]\n\n"
CLIENT_CLOSED = 499  # recorded status of a stream the client left before its end


_ids = random.Random()  # identifiers, not secrets: no system call per request


def completion_id() -> str:
    return f"chatcmpl-{_ids.getrandbits(96):024x}"


def completion_body(cid: str, created: int, completion: Completion) -> bytes:
    """The chat.completion body, rendered like the chunks: a fixed template around ``json.dumps`` of
    each variable piece (a third of the cost of building and dumping the nested dict)."""
    content: str | None = completion.content
    tool_calls = ""
    if completion.tool_calls:
        # As OpenAI does: a message that only calls tools has null content.
        tool_calls = ',"tool_calls":' + json.dumps(completion.tool_calls, separators=(",", ":"))
        content = content or None
    usage = completion.usage
    return (
        f'{{"id":{json.dumps(cid)},"object":"chat.completion","created":{created},'
        f'"model":{json.dumps(completion.model)},"choices":[{{"index":0,"message":{{"role":"assistant",'
        f'"content":{json.dumps(content)},"refusal":null{tool_calls}}},"logprobs":null,'
        f'"finish_reason":{json.dumps(completion.finish_reason)}}}],"usage":{{"prompt_tokens":'
        f'{usage.prompt_tokens},"completion_tokens":{usage.completion_tokens},'
        f'"total_tokens":{usage.total_tokens}}}}}'
    ).encode()


def _usage(usage: Usage) -> dict[str, int]:
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens,
    }


def include_usage(request: ChatRequest) -> bool:
    """``stream_options.include_usage`` (an OpenAI field kept among the request's extras)."""
    options = (request.model_extra or {}).get("stream_options")
    return isinstance(options, dict) and options.get("include_usage") is True


def estimate_usage(request: ChatRequest, completion_text_tokens: int) -> Usage:
    """For a backend that streams no usage: the mock's approximate token count."""
    prompt = sum(count_tokens(m.content or "") + 4 for m in request.messages)
    return Usage(prompt, completion_text_tokens)


class ChunkEncoder:
    __slots__ = ("_head",)

    def __init__(self, cid: str, created: int, model: str) -> None:
        self._head = (
            f'data: {{"id":{json.dumps(cid)},"object":"chat.completion.chunk",'
            f'"created":{created},"model":{json.dumps(model)},"choices":'
        )

    def role(self) -> bytes:
        return (
            self._head + '[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}\n\n'
        ).encode()

    def content(self, text: str) -> bytes:
        return (
            self._head
            + '[{"index":0,"delta":{"content":'
            + json.dumps(text)
            + '},"finish_reason":null}]}\n\n'
        ).encode()

    def tool_calls(self, fragments: list[dict[str, Any]]) -> bytes:
        return (
            self._head
            + '[{"index":0,"delta":{"tool_calls":'
            + json.dumps(fragments, separators=(",", ":"))
            + '},"finish_reason":null}]}\n\n'
        ).encode()

    def finish(self, reason: str) -> bytes:
        return (
            self._head + '[{"index":0,"delta":{},"finish_reason":' + json.dumps(reason) + "}]}\n\n"
        ).encode()

    def usage(self, usage: Usage) -> bytes:
        return (
            self._head + '[],"usage":' + json.dumps(_usage(usage), separators=(",", ":")) + "}\n\n"
        ).encode()


def error_event(err: AgentError) -> bytes:
    return b"data: " + json.dumps(gateway_envelope(err), separators=(",", ":")).encode() + b"\n\n"


async def sse_stream(
    request: ChatRequest,
    encoder: ChunkEncoder,
    first: Delta | None,
    rest: AsyncIterator[Delta],
    on_done: Callable[[int, Usage], Awaitable[None]],
) -> AsyncIterator[bytes]:
    """The SSE body of a chat stream whose first delta is already in hand.

    Events of deltas that arrived together (``Delta.more``) are yielded as one piece, so a network
    read from the upstream becomes one write to the client; the closing events and ``[DONE]`` are
    the last piece. ``on_done(status, usage)`` runs exactly once, before ``[DONE]``: 200, the error's
    status after a mid-stream failure, or 499 when the client went away (the backend's stream is
    closed then too).
    """
    status, usage, tokens = CLIENT_CLOSED, None, 0
    pending = [encoder.role()]
    try:
        finish, delta = "stop", first
        while delta is not None:
            if delta.content:
                tokens += count_tokens(delta.content) if usage is None else 0
                pending.append(encoder.content(delta.content))
            if delta.tool_calls:
                pending.append(encoder.tool_calls(delta.tool_calls))
            if delta.usage is not None:
                usage = delta.usage
            if delta.finish_reason:
                finish = delta.finish_reason
            if pending and not delta.more:
                yield b"".join(pending)
                pending = []
            delta = await anext(rest, None)
        pending.append(encoder.finish(finish))
        if include_usage(request):
            usage = usage or estimate_usage(request, tokens)
            pending.append(encoder.usage(usage))
        status = 200
    except AgentError as err:
        status = err.http_status
        pending.append(error_event(err))
    except Exception:
        log.exception("chat stream failed after it started")
        status = 500
        pending.append(error_event(AgentError("The stream failed; please retry.")))
    finally:
        try:
            # Shielded: a client that went away cancels this generator, and its usage still counts.
            await asyncio.shield(on_done(status, usage or estimate_usage(request, tokens)))
        finally:
            closer = getattr(rest, "aclose", None)
            if closer is not None:
                await closer()
    pending.append(DONE)
    yield b"".join(pending)
