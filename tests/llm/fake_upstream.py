"""A real OpenAI-compatible upstream on a loopback port, with scriptable faults.

It runs uvicorn in a thread of its own (its own event loop), so it keeps answering while a test
blocks or while a gateway runs in another thread. Tests change ``upstream.script`` between calls.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.conftest import free_port


@dataclass
class Script:
    """What the next requests get. ``fail_times`` requests answer ``fail_status`` first."""

    chunks: list[str] = field(default_factory=lambda: ["Hello", " from", " the", " upstream", "!"])
    fail_times: int = 0
    fail_status: int = 500
    fail_body: dict[str, Any] | None = None
    first_byte_delay: float = 0.0
    # stream faults: after this many content chunks, "die" (close), "stall" (go quiet) or "error" (in-band)
    break_after: int | None = None
    break_mode: str = "die"
    # streaming pass-through: hold the last chunk until the test sets this event
    gate: threading.Event | None = None
    usage: bool = True
    finish_reason: str = "stop"


class FakeUpstream:
    def __init__(self, keep_alive: float = 5.0) -> None:
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.script = Script()
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.peers: list[int] = []  # client port per request: one port, one connection
        self.sent_last_chunk = threading.Event()
        app = Starlette(routes=[Route("/v1/chat/completions", self._chat, methods=["POST"])])
        config = uvicorn.Config(
            app,
            host="127.0.0.1",
            port=self.port,
            log_level="critical",
            timeout_graceful_shutdown=1,
            timeout_keep_alive=keep_alive,  # idle connections are closed by the upstream after this
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> FakeUpstream:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("fake upstream did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.script.gate is not None:
            self.script.gate.set()
        self.server.should_exit = True
        self.server.force_exit = True  # no graceful wait for the test's idle or cut connections
        self.thread.join(timeout=10)

    async def _chat(self, request: Request) -> Response:
        body = await request.json()
        self.requests.append(body)
        self.headers.append(dict(request.headers))
        self.peers.append(request.client.port if request.client else 0)
        script = self.script
        if script.first_byte_delay:
            await asyncio.sleep(script.first_byte_delay)
        if script.fail_times > 0:
            script.fail_times -= 1
            error = script.fail_body or {"error": {"message": "upstream exploded", "type": "server_error"}}
            return JSONResponse(error, status_code=script.fail_status)
        text = "".join(script.chunks)
        usage = {
            "prompt_tokens": 11,
            "completion_tokens": len(script.chunks),
            "total_tokens": 11 + len(script.chunks),
        }
        if not body.get("stream"):
            message = {"role": "assistant", "content": text}
            return JSONResponse(
                {
                    "id": "chatcmpl-fake",
                    "object": "chat.completion",
                    "created": 1763600000,
                    "model": body["model"],
                    "choices": [{"index": 0, "message": message, "finish_reason": script.finish_reason}],
                    **({"usage": usage} if script.usage else {}),
                }
            )
        include_usage = script.usage and (body.get("stream_options") or {}).get("include_usage")
        return StreamingResponse(
            self._sse(body["model"], script, usage if include_usage else None),
            media_type="text/event-stream",
        )

    async def _sse(self, model: str, script: Script, usage: dict[str, Any] | None) -> AsyncIterator[bytes]:
        def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
            choices = [{"index": 0, "delta": delta, "finish_reason": finish}]
            payload = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1763600000}
            payload.update(model=model, choices=choices, **extra)
            return f"data: {json.dumps(payload)}\n\n".encode()

        yield chunk({"role": "assistant", "content": ""})
        for index, piece in enumerate(script.chunks):
            if script.break_after is not None and index == script.break_after:
                if script.break_mode == "stall":
                    await asyncio.sleep(30)
                if script.break_mode == "error":
                    yield b'event: error\ndata: {"error": {"message": "model overloaded mid-stream"}}\n\n'
                    return
                raise ConnectionAbortedError("fake upstream dies mid-stream")
            if index == len(script.chunks) - 1 and script.gate is not None:
                await asyncio.to_thread(script.gate.wait, 10)
            yield chunk({"content": piece})
        self.sent_last_chunk.set()
        yield chunk({}, script.finish_reason)
        if usage is not None:
            payload = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1763600000}
            yield f"data: {json.dumps({**payload, 'model': model, 'choices': [], 'usage': usage})}\n\n".encode()
        yield b"data: [DONE]\n\n"
