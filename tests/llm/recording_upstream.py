"""A real OpenAI-compatible upstream on loopback that records what it receives and answers fixtures.

It serves ``/v1/chat/completions``, ``/v1/completions``, ``/v1/embeddings`` and ``/v1/responses``
with the answers of ``relay_fixtures.json`` (rich OpenAI shapes: several choices, logprobs, refusal,
annotations, tool calls, fingerprints, usage details, and a field OpenAI may add tomorrow), JSON or
server-sent events as the request asks, so tests can check that the gateway changes nothing but
the model id. It runs uvicorn in a thread of its own, like ``fake_upstream.FakeUpstream``.
"""

from __future__ import annotations

import asyncio
import copy
import json
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.conftest import free_port

FIXTURES = json.loads((Path(__file__).parent / "relay_fixtures.json").read_text(encoding="utf-8"))
UPSTREAM_MODEL: str = FIXTURES["upstream_model"]  # what the upstream calls the model in its answers
CHAT_ANSWER: dict[str, Any] = FIXTURES["chat_answer"]
CHAT_CHUNKS: list[dict[str, Any]] = FIXTURES["chat_chunks"]
USAGE: dict[str, Any] = CHAT_ANSWER["usage"]
COMPLETION_ANSWER: dict[str, Any] = FIXTURES["completion_answer"]
COMPLETION_CHUNKS: list[dict[str, Any]] = FIXTURES["completion_chunks"]
EMBEDDINGS_ANSWER: dict[str, Any] = FIXTURES["embeddings_answer"]
RESPONSE_ANSWER: dict[str, Any] = FIXTURES["response_answer"]


def _response_events() -> list[dict[str, Any]]:
    """The Responses API's events of ``RESPONSE_ANSWER`` (one message, two text deltas)."""
    message = RESPONSE_ANSWER["output"][0]
    part = message["content"][0]
    opening = {**RESPONSE_ANSWER, "status": "in_progress", "output": [], "usage": None}
    where = {"item_id": message["id"], "output_index": 0, "content_index": 0}
    return [
        {"type": "response.created", "response": opening},
        {"type": "response.in_progress", "response": opening},
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {**message, "status": "in_progress", "content": []},
        },
        {"type": "response.content_part.added", **where, "part": {**part, "text": ""}},
        {"type": "response.output_text.delta", **where, "delta": "Hi", "logprobs": []},
        {"type": "response.output_text.delta", **where, "delta": " there", "logprobs": []},
        {"type": "response.output_text.done", **where, "text": part["text"], "logprobs": []},
        {"type": "response.content_part.done", **where, "part": part},
        {"type": "response.output_item.done", "output_index": 0, "item": message},
        {"type": "response.completed", "response": RESPONSE_ANSWER},
    ]


RESPONSE_EVENTS = _response_events()
PATHS = {"chat/completions", "completions", "embeddings", "responses"}


def chunk_events(endpoint: str, with_usage: bool) -> list[bytes]:
    """The SSE body of a stream, as this upstream writes it (compact JSON)."""
    if endpoint == "responses":
        return [
            f"event: {e['type']}\ndata: {_compact({**e, 'sequence_number': n})}\n\n".encode()
            for n, e in enumerate(RESPONSE_EVENTS)
        ]
    kind, chunks = (
        ("chat.completion.chunk", CHAT_CHUNKS)
        if endpoint == "chat/completions"
        else ("text_completion", COMPLETION_CHUNKS)
    )
    head = {
        "id": "up-stream-1",
        "object": kind,
        "created": 1763600000,
        "model": UPSTREAM_MODEL,
        "system_fingerprint": "fp_upstream_1",
    }
    events = [f"data: {_compact({**head, **c})}\n\n".encode() for c in chunks]
    if with_usage:
        usage = USAGE if endpoint == "chat/completions" else COMPLETION_ANSWER["usage"]
        events.append(f"data: {_compact({**head, 'choices': [], 'usage': usage})}\n\n".encode())
    return [*events, b"data: [DONE]\n\n"]


def _compact(data: Any) -> str:
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


class RecordingUpstream:
    def __init__(self) -> None:
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.requests: list[tuple[str, dict[str, Any]]] = []  # (endpoint, body)
        self.missing: set[str] = set()  # endpoints answered with 404
        self.send_usage = True
        self.event_delay = 0.0  # seconds between stream events
        self.stream_ended = threading.Event()  # set when a stream generator ends, early or not
        self.stream_finished = False  # the last stream was sent to its end
        routes = [Route(f"/v1/{path}", self._handle(path), methods=["POST"]) for path in sorted(PATHS)]
        config = uvicorn.Config(
            Starlette(routes=routes), host="127.0.0.1", port=self.port, log_level="critical"
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> RecordingUpstream:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("recording upstream did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)

    def last(self, endpoint: str) -> dict[str, Any]:
        return next(body for path, body in reversed(self.requests) if path == endpoint)

    def _handle(self, endpoint: str):
        answers = {
            "chat/completions": CHAT_ANSWER,
            "completions": COMPLETION_ANSWER,
            "embeddings": EMBEDDINGS_ANSWER,
            "responses": RESPONSE_ANSWER,
        }

        async def handle(request: Request) -> Response:
            body = await request.json()
            self.requests.append((endpoint, body))
            if endpoint in self.missing:
                return JSONResponse({"error": {"message": f"Unknown path /v1/{endpoint}"}}, status_code=404)
            if not body.get("stream"):
                answer = copy.deepcopy(answers[endpoint])
                if not self.send_usage:
                    answer.pop("usage")
                return Response(json.dumps(answer), media_type="application/json")  # with spaces
            with_usage = self.send_usage and (body.get("stream_options") or {}).get("include_usage")
            return StreamingResponse(
                self._stream(chunk_events(endpoint, bool(with_usage))), media_type="text/event-stream"
            )

        return handle

    async def _stream(self, events: list[bytes]) -> AsyncIterator[bytes]:
        self.stream_ended.clear()
        self.stream_finished = False
        try:
            for event in events:
                if self.event_delay:
                    await asyncio.sleep(self.event_delay)
                yield event
            self.stream_finished = True
        finally:
            self.stream_ended.set()
