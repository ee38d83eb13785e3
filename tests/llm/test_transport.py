"""The pooled HTTP/1.1 transport: keep-alive reuse, stale and abandoned connections, the pool limit."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from agent_server.foundation.errors import Unavailable
from agent_server.llm.openai_compat import OpenAICompatBackend
from agent_server.llm.transport import PooledTransport
from tests.llm.conftest import config
from tests.llm.fake_upstream import FakeUpstream
from tests.llm.test_openai_compat import chat


@pytest.fixture
def short_lived() -> Iterator[FakeUpstream]:
    """An upstream that closes idle keep-alive connections after 0.1 s."""
    with FakeUpstream(keep_alive=0.1) as server:
        yield server


def pooled(upstream: FakeUpstream, **options: object) -> OpenAICompatBackend:
    return OpenAICompatBackend(config(upstream.base_url), backoff=0.01, **options)  # type: ignore[arg-type]


async def test_sequential_requests_share_one_connection(upstream: FakeUpstream) -> None:
    backend = pooled(upstream)
    try:
        for _ in range(3):
            await backend.complete(chat())
            [d async for d in backend.stream(chat(stream=True))]
        assert len(upstream.peers) == 6 and len(set(upstream.peers)) == 1
    finally:
        await backend.aclose()


async def test_a_connection_the_upstream_closed_while_idle_is_not_reused(short_lived: FakeUpstream) -> None:
    backend = pooled(short_lived, retries=0)  # no retry budget: success must come from the pool
    try:
        await backend.complete(chat())
        await asyncio.sleep(0.3)  # a bounded wait on loopback: the upstream drops the idle connection
        assert (await backend.complete(chat())).content
        assert len(set(short_lived.peers)) == 2
    finally:
        await backend.aclose()


async def test_an_abandoned_stream_closes_its_connection(upstream: FakeUpstream) -> None:
    upstream.script.gate = threading.Event()  # the upstream holds the rest of the stream
    backend = pooled(upstream)
    try:
        deltas = backend.stream(chat(stream=True))
        assert (await anext(deltas)).content == "Hello"
        await deltas.aclose()  # the client went away half-way
        upstream.script.gate.set()
        assert (await backend.complete(chat())).content
        assert len(set(upstream.peers)) == 2  # the half-read connection was not reused
    finally:
        await backend.aclose()


async def test_the_pool_limit_queues_then_times_out(upstream: FakeUpstream) -> None:
    upstream.script.first_byte_delay = 0.5
    backend = pooled(upstream, max_connections=1, connect_timeout=0.2)  # pool wait = connect timeout
    try:
        first = asyncio.create_task(backend.complete(chat()))
        await asyncio.sleep(0.05)
        started = time.monotonic()
        with pytest.raises(Unavailable):
            await backend.complete(chat())
        assert time.monotonic() - started < 0.45
        assert (await first).content
    finally:
        await backend.aclose()


async def test_a_cancelled_request_frees_its_slot(upstream: FakeUpstream) -> None:
    upstream.script.first_byte_delay = 0.3
    transport = PooledTransport(max_connections=1)
    backend = OpenAICompatBackend(config(upstream.base_url), transport=transport)
    try:
        task = asyncio.create_task(backend.complete(chat()))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        upstream.script.first_byte_delay = 0
        assert (await backend.complete(chat())).content  # the only slot is free again
    finally:
        await backend.aclose()


async def test_it_is_a_plain_httpx_transport_too(upstream: FakeUpstream) -> None:
    async with httpx.AsyncClient(transport=PooledTransport()) as client:
        response = await client.post(
            f"{upstream.base_url}/chat/completions", json={"model": "m", "messages": []}
        )
        assert response.status_code == 200 and response.json()["object"] == "chat.completion"
        async with client.stream(
            "POST", f"{upstream.base_url}/chat/completions", json={"model": "m", "stream": True}
        ) as streamed:
            lines = [line async for line in streamed.aiter_lines() if line]
        assert lines[-1] == "data: [DONE]"


async def test_a_body_delimited_by_closing_the_connection_is_complete() -> None:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{"choices": []}')
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        async with httpx.AsyncClient(transport=PooledTransport()) as client:
            response = await client.get(f"http://127.0.0.1:{port}/")
            assert response.json() == {"choices": []}
    finally:
        server.close()
        await server.wait_closed()
