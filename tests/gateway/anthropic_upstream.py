"""A real Anthropic-compatible upstream on loopback: ``POST /v1/messages``, recording what it receives.

It answers a fixed Message (text and a tool call, prompt-cache usage, a field of tomorrow), or the
same as Anthropic's stream of events, as the request asks; ``break_after`` makes a stream send an
``error`` event after that many events. It runs uvicorn in a thread, like ``RecordingUpstream``.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import AsyncIterator
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.conftest import free_port

UPSTREAM_MODEL = "claude-upstream-7"
USAGE = {
    "input_tokens": 11,
    "output_tokens": 9,
    "cache_creation_input_tokens": 3,
    "cache_read_input_tokens": 5,
}
MESSAGE: dict[str, Any] = {
    "id": "msg_upstream_1",
    "type": "message",
    "role": "assistant",
    "model": UPSTREAM_MODEL,
    "content": [
        {"type": "text", "text": "Checking the weather."},
        {"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"city": "Paris"}},
    ],
    "stop_reason": "tool_use",
    "stop_sequence": None,
    "usage": USAGE,
    "a_field_of_tomorrow": {"deep": [1, 2.5, None]},
}
EVENTS: list[dict[str, Any]] = [
    {
        "type": "message_start",
        "message": {**MESSAGE, "content": [], "stop_reason": None, "usage": {**USAGE, "output_tokens": 1}},
    },
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    {"type": "ping"},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Checking "}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "the weather."}},
    {"type": "content_block_stop", "index": 0},
    {
        "type": "content_block_start",
        "index": 1,
        "content_block": {"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {}},
    },
    {
        "type": "content_block_delta",
        "index": 1,
        "delta": {"type": "input_json_delta", "partial_json": '{"city": "Par'},
    },
    {
        "type": "content_block_delta",
        "index": 1,
        "delta": {"type": "input_json_delta", "partial_json": 'is"}'},
    },
    {"type": "content_block_stop", "index": 1},
    {
        "type": "message_delta",
        "delta": {"stop_reason": "tool_use", "stop_sequence": None},
        "usage": {"output_tokens": 9},
    },
    {"type": "message_stop"},
]


def event_bytes(event: dict[str, Any]) -> bytes:
    return f"event: {event['type']}\ndata: {json.dumps(event, separators=(',', ':'))}\n\n".encode()


class AnthropicUpstream:
    def __init__(self) -> None:
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.requests: list[tuple[dict[str, str], dict[str, Any]]] = []  # (headers, body)
        self.heads: list[list[tuple[bytes, bytes]]] = []  # each request's headers, repeats included
        self.break_after: int | None = None
        self.status = 200
        app = Starlette(routes=[Route("/v1/messages", self._messages, methods=["POST"])])
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="critical")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> AnthropicUpstream:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("anthropic upstream did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)

    @property
    def last(self) -> tuple[dict[str, str], dict[str, Any]]:
        return self.requests[-1]

    async def _messages(self, request: Request) -> Response:
        body = await request.json()
        self.requests.append((dict(request.headers), body))
        self.heads.append(list(request.headers.raw))
        if self.status != 200:
            error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
            return JSONResponse(error, status_code=self.status)
        if not body.get("stream"):
            return Response(json.dumps(MESSAGE), media_type="application/json")  # with spaces, as json does
        return StreamingResponse(self._events(), media_type="text/event-stream")

    async def _events(self) -> AsyncIterator[bytes]:
        for number, event in enumerate(EVENTS):
            if self.break_after is not None and number == self.break_after:
                error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
                yield f"event: error\ndata: {json.dumps(error)}\n\n".encode()
                return
            yield event_bytes(event)
