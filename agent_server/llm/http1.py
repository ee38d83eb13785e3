"""One HTTP/1.1 client connection as an asyncio protocol, parsing responses with httptools.

Used by ``agent_server/llm/transport.py``; errors are httpx's so callers handle one family.
"""

from __future__ import annotations

import asyncio
from collections import deque

import httptools
import httpx

PAUSE_AT = 1 << 20  # stop reading a response the consumer does not drain past 1 MiB of buffer


class Connection(asyncio.Protocol):
    """One keep-alive connection; parses one response at a time."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.idle_since = 0.0
        self._error: Exception | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._paused = False
        self._begin()

    def _begin(self) -> None:
        self.parser = httptools.HttpResponseParser(self)
        self.headers: list[tuple[bytes, bytes]] = []
        self.encoding: bytes | None = None  # Content-Encoding, noted while parsing: no header scan later
        self.chunks: deque[bytes] = deque()
        self.buffered = 0
        self.head_done = self.complete = self.got_bytes = self.keep_alive = False

    # -- asyncio.Protocol ------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.got_bytes = True
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(httpx.RemoteProtocolError(f"malformed upstream response: {exc}"))
            self.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.complete or self._error is not None:
            return
        if self.head_done and self._close_delimited():
            self.complete = True  # a body without length or chunking ends when the connection does
            self.keep_alive = False
            self._wake()
        else:
            self._fail(httpx.ReadError("the upstream closed the connection"))

    def _close_delimited(self) -> bool:
        names = {name.lower() for name, _ in self.headers}
        return b"content-length" not in names and b"transfer-encoding" not in names

    # -- httptools callbacks ------------------------------------------------------------------
    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name, value))
        if len(name) == 16 and name.lower() == b"content-encoding":
            self.encoding = value

    def on_headers_complete(self) -> None:
        self.head_done = True
        # Asked now: llhttp forgets the answer once the message is complete.
        self.keep_alive = self.parser.should_keep_alive()
        self._wake()

    def on_body(self, body: bytes) -> None:
        self.chunks.append(body)
        self.buffered += len(body)
        if self.buffered > PAUSE_AT and not self._paused and self.transport is not None:
            self._paused = True
            self.transport.pause_reading()
        self._wake()

    def on_message_complete(self) -> None:
        self.complete = True
        self._wake()

    # -- used by the transport --------------------------------------------------------------
    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _fail(self, error: Exception) -> None:
        self._error = error
        self._wake()

    async def _wait(self, timeout: float | None) -> None:
        if self._error is not None:
            raise self._error
        waiter = self._waiter = self.loop.create_future()
        timer = None if timeout is None else self.loop.call_later(timeout, _expire, waiter)
        try:
            await waiter
        finally:
            self._waiter = None
            if timer is not None:
                timer.cancel()
        if self._error is not None:
            raise self._error

    def send(self, data: bytes) -> None:
        self._begin()
        self._error = None
        self.transport.write(data)  # type: ignore[union-attr]

    async def tunnel(self, target: bytes, authorization: bytes | None) -> None:
        """Ask the HTTP proxy at the other end for a tunnel to ``target`` (host:port); the caller
        bounds the wait. Afterwards the connection carries whatever the caller starts (TLS)."""
        head = b"CONNECT %s HTTP/1.1\r\nHost: %s\r\n" % (target, target)
        if authorization:
            head += b"Proxy-Authorization: %s\r\n" % authorization
        self.send(head + b"\r\n")
        try:
            await self.read_head(None)
        except httpx.ReadError:
            raise httpx.ProxyError("the proxy closed the connection instead of opening a tunnel") from None
        status = self.parser.get_status_code()
        if not 200 <= status < 300:
            raise httpx.ProxyError(f"the proxy refused a tunnel to {target.decode()} (HTTP {status})")

    async def read_head(self, timeout: float | None) -> None:
        while not self.head_done:
            await self._wait(timeout)

    async def read_chunk(self, timeout: float | None) -> bytes:
        """The next piece of the body; b"" once the message is complete."""
        while not self.chunks:
            if self.complete:
                return b""
            await self._wait(timeout)
        chunk = self.chunks.popleft()
        self.buffered -= len(chunk)
        if self._paused and self.buffered < PAUSE_AT // 2:
            self._paused = False
            self.transport.resume_reading()  # type: ignore[union-attr]
        return chunk

    def reusable(self) -> bool:
        return self.complete and self.keep_alive and not self.closed and self._error is None

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()


def _expire(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_exception(httpx.ReadTimeout("the upstream did not send data in time"))
