"""Real servers on loopback for the transport tests, on the test's own event loop: a small HTTP/1.1
upstream (plain or TLS, stoppable and restartable on its port) and a forward proxy (CONNECT tunnels
and absolute-form forwarding) that records what went through it."""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import trustme

from tests.conftest import free_port


@dataclass
class Request:
    method: str
    target: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Reply:
    """An answer: ``body`` as bytes (Content-Length) or as pieces (chunked, each written at once)."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | AsyncIterator[bytes] = b""


Handler = Callable[[Request], Awaitable[Reply]]


def tls_server(ca: trustme.CA, *names: str) -> ssl.SSLContext:
    """A server context with a certificate of the test CA for ``names``."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(*names).configure_cert(context)
    return context


async def read_head(reader: asyncio.StreamReader) -> tuple[str, dict[str, str]] | None:
    """The request line and the headers (names lower case), or None at the end of the stream."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    line, *lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for header in filter(None, lines):
        name, _, value = header.partition(":")
        headers[name.strip().lower()] = value.strip()
    return line, headers


class HttpServer:
    """An HTTP/1.1 upstream on 127.0.0.1; ``handler`` answers, ``requests`` records."""

    def __init__(self, handler: Handler, tls: ssl.SSLContext | None = None) -> None:
        self.handler, self.tls = handler, tls
        self.port = free_port()
        self.requests: list[Request] = []
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    @property
    def base_url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}/v1"

    async def start(self) -> HttpServer:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port, ssl=self.tls)
        return self

    async def stop(self) -> None:
        """Stop listening and close every open connection (a restart gets the same port)."""
        if self._server is not None:
            self._server.close()
            for writer in list(self._writers):
                writer.close()
            await self._server.wait_closed()
            self._server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            while (head := await read_head(reader)) is not None:
                line, headers = head
                method, target, _ = line.split(" ", 2)
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                request = Request(method, target, headers, body)
                self.requests.append(request)
                await self._answer(writer, await self.handler(request))
        except (ConnectionError, asyncio.IncompleteReadError, ssl.SSLError):
            pass
        finally:
            self._writers.discard(writer)
            writer.close()

    @staticmethod
    async def _answer(writer: asyncio.StreamWriter, reply: Reply) -> None:
        head = [f"HTTP/1.1 {reply.status} X"] + [f"{k}: {v}" for k, v in reply.headers.items()]
        if isinstance(reply.body, bytes):
            head.append(f"Content-Length: {len(reply.body)}")
            writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + reply.body)
            await writer.drain()
            return
        writer.write(("\r\n".join([*head, "Transfer-Encoding: chunked"]) + "\r\n\r\n").encode())
        async for piece in reply.body:
            writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            await writer.drain()
        writer.write(b"0\r\n\r\n")
        await writer.drain()


@dataclass
class Passage:
    """One request line the proxy saw, and its Proxy-Authorization header."""

    line: str
    authorization: str | None


class ForwardProxy:
    """An HTTP proxy on 127.0.0.1: CONNECT opens a tunnel, an absolute-form request is forwarded.
    With ``credentials`` ("user:pass" in Basic form) anything else gets 407."""

    def __init__(self, credentials: str | None = None) -> None:
        self.credentials = credentials
        self.port = free_port()
        self.passages: list[Passage] = []
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> ForwardProxy:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)
        return self

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            for writer in list(self._writers):
                writer.close()
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            head = await read_head(reader)
            if head is None:
                return
            line, headers = head
            method, target, version = line.split(" ", 2)
            authorization = headers.pop("proxy-authorization", None)
            self.passages.append(Passage(line, authorization))
            if self.credentials is not None and authorization != self.credentials:
                writer.write(b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n")
                await writer.drain()
                return
            if method == "CONNECT":
                host, _, port = target.rpartition(":")
                up_reader, up_writer = await asyncio.open_connection(host.strip("[]"), int(port))
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:  # forwarded: origin-form to the upstream, without the proxy's own header
                url = urlsplit(target)
                up_reader, up_writer = await asyncio.open_connection(url.hostname, url.port or 80)
                path = url.path + (f"?{url.query}" if url.query else "")
                lines = [f"{method} {path} {version}"] + [f"{k}: {v}" for k, v in headers.items()]
                up_writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        except (ConnectionError, OSError):
            pass
        finally:
            self._writers.discard(writer)
            writer.close()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError, OSError):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    writer.close()


def completion(text: str = "Hello through the wire", model: str = "upstream-model-1") -> dict[str, Any]:
    """A chat completion as an OpenAI-compatible upstream answers it."""
    return {
        "id": "chatcmpl-loopback",
        "object": "chat.completion",
        "created": 1763600000,
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 4, "total_tokens": 9},
    }


def sse_events(pieces: list[str], model: str = "upstream-model-1") -> list[bytes]:
    """The SSE events of a streamed answer of ``pieces``, ``[DONE]`` included."""

    def event(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
        payload = {"id": "chatcmpl-loopback", "object": "chat.completion.chunk", "model": model}
        payload.update(choices=[{"index": 0, "delta": delta, "finish_reason": finish}], **extra)
        return f"data: {json.dumps(payload)}\n\n".encode()

    usage = {"prompt_tokens": 5, "completion_tokens": len(pieces), "total_tokens": 5 + len(pieces)}
    events = [event({"role": "assistant", "content": ""})]
    events += [event({"content": piece}) for piece in pieces]
    events += [event({}, "stop"), event({}, usage=usage), b"data: [DONE]\n\n"]
    return events


async def chat_upstream(request: Request) -> Reply:
    """The default handler: a completion, streamed when asked; ``GET /v1/models`` lists one model."""
    if request.method == "GET":
        return Reply(200, {"Content-Type": "application/json"}, b'{"object":"list","data":[]}')
    if not request.json().get("stream"):
        return Reply(200, {"Content-Type": "application/json"}, json.dumps(completion()).encode())

    async def events() -> AsyncIterator[bytes]:
        for piece in sse_events(["Hello", " through", " the", " wire"]):
            yield piece

    return Reply(200, {"Content-Type": "text/event-stream"}, events())
