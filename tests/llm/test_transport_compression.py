"""Compressed upstream answers: gzip and deflate JSON, a gzip SSE stream decoded event by event, and
malformed or unknown encodings as upstream errors (502), never a crash. Both transports."""

from __future__ import annotations

import asyncio
import gzip
import json
import zlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from agent_server.foundation.errors import UpstreamFailed, ValidationFailed
from agent_server.llm.openai_compat import OpenAICompatBackend
from tests.llm.conftest import config
from tests.llm.loopback import HttpServer, Reply, Request, completion, sse_events
from tests.llm.test_openai_compat import chat

Make = Callable[[HttpServer], OpenAICompatBackend]


@pytest.fixture(params=["pooled", "httpx"])
async def make(request: pytest.FixtureRequest) -> AsyncIterator[Make]:
    made: list[OpenAICompatBackend] = []

    def build(server: HttpServer) -> OpenAICompatBackend:
        backend = OpenAICompatBackend(
            config(server.base_url), transport_kind=request.param, read_timeout=2.0, retries=0
        )
        made.append(backend)
        return backend

    yield build
    for backend in made:
        await backend.aclose()


async def serving(handler: Callable[[Request], Any]) -> HttpServer:
    return await HttpServer(handler).start()


def compressed(status: int, document: dict[str, Any], encoding: str, data: bytes | None = None) -> Reply:
    raw = json.dumps(document).encode()
    body = data if data is not None else gzip.compress(raw) if encoding == "gzip" else zlib.compress(raw)
    return Reply(status, {"Content-Type": "application/json", "Content-Encoding": encoding}, body)


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
async def test_a_compressed_completion_is_decoded(make: Make, encoding: str) -> None:
    async def handler(request: Request) -> Reply:
        return compressed(200, completion("Squeezed and restored"), encoding)

    server = await serving(handler)
    try:
        assert (await make(server).complete(chat())).content == "Squeezed and restored"
    finally:
        await server.stop()


async def test_a_gzip_stream_arrives_event_by_event(make: Make) -> None:
    """The upstream flushes its compressor after each event and holds the rest back until the
    test has read the first delta: decoding must not wait for more input."""
    release = asyncio.Event()

    async def handler(request: Request) -> Reply:
        async def body() -> AsyncIterator[bytes]:
            compressor = zlib.compressobj(wbits=31)  # gzip framing
            events = sse_events(["first", " second", " third"])
            for index, event in enumerate(events):
                if index == 2:
                    await release.wait()
                yield compressor.compress(event) + compressor.flush(zlib.Z_SYNC_FLUSH)
            yield compressor.flush()

        return Reply(200, {"Content-Type": "text/event-stream", "Content-Encoding": "gzip"}, body())

    server = await serving(handler)
    try:
        deltas = make(server).stream(chat(stream=True))
        assert (await asyncio.wait_for(anext(deltas), 2)).content == "first"  # before the rest was sent
        release.set()
        rest = [delta async for delta in deltas]
        assert "".join(d.content for d in rest) == " second third"
        assert rest[-1].finish_reason == "stop" and rest[-1].usage is not None
        assert rest[-1].usage.completion_tokens == 3
    finally:
        release.set()
        await server.stop()


async def test_a_compressed_error_body_is_read(make: Make) -> None:
    async def handler(request: Request) -> Reply:
        return compressed(400, {"error": {"message": "max_tokens is too large"}}, "gzip")

    server = await serving(handler)
    try:
        with pytest.raises(ValidationFailed, match="max_tokens is too large"):
            await make(server).complete(chat())
    finally:
        await server.stop()


@pytest.mark.parametrize(
    ("encoding", "data"), [("gzip", b"\x1f\x8b\x08\x00 this is not gzip"), ("br", b"\x0b\x02\x80{}\x03")]
)
async def test_a_malformed_or_unknown_encoding_is_an_upstream_error(
    make: Make, encoding: str, data: bytes
) -> None:
    async def handler(request: Request) -> Reply:
        return compressed(200, {}, encoding, data)

    server = await serving(handler)
    try:
        with pytest.raises(UpstreamFailed) as caught:
            await make(server).complete(chat())
        assert caught.value.http_status == 502
    finally:
        await server.stop()


async def test_we_still_ask_for_uncompressed_answers(make: Make) -> None:
    async def handler(request: Request) -> Reply:
        return Reply(200, {"Content-Type": "application/json"}, json.dumps(completion()).encode())

    server = await serving(handler)
    try:
        await make(server).complete(chat())
        # identity: compression would hold SSE events back in the upstream's compressor.
        assert server.requests[0].headers["accept-encoding"] == "identity"
    finally:
        await server.stop()
