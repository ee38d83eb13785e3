"""uvicorn's httptools protocol with a bounded request head: 431 for too many or too large header
fields, 414 for a too long target, instead of buffering whatever a client sends.

httptools keeps a header field whole until it ends, and uvicorn sets no bound of its own, so a
client could send a megabyte of one header (or thousands of them) and have it parsed and handed to
the app. Here the bytes of a request's head are counted as they arrive, before parsing, so memory
stays bounded by the limit plus one read; the refusal is a short text answer with
``Connection: close``. The rest of what the client sends is read and dropped for a moment
(a lingering close, as nginx does), so the client reads the answer instead of a connection reset.

``agentgate serve`` selects this class (``http=`` of uvicorn, an import string, so spawned workers
load it too).
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

IMPORT_PATH = "http_facade.http_protocol:BoundedHttpToolsProtocol"
MAX_HEAD_BYTES = 64 * 1024  # request line and header fields together (Node: 16 KB, Go: 1 MB)
MAX_TARGET_BYTES = 16 * 1024  # the request target (path and query)
MAX_HEADER_FIELDS = 100  # Apache's LimitRequestFields
LINGER_SECONDS = 2.0  # how long the rest of a refused request is read and dropped


class HeadTooLarge(Exception):
    def __init__(self, status: int, text: str) -> None:
        super().__init__(text)
        self.status, self.text = status, text


TOO_MANY = HeadTooLarge(431, f"Too many header fields (at most {MAX_HEADER_FIELDS}).\n")
TOO_LARGE = HeadTooLarge(431, f"Request header fields too large (at most {MAX_HEAD_BYTES} bytes).\n")
TOO_LONG = HeadTooLarge(414, f"Request target too long (at most {MAX_TARGET_BYTES} bytes).\n")


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._in_head = True  # between requests or inside a request's head
        self._raw_head = 0  # bytes of reads that were all head (bounds what httptools buffers)
        self._fields = 0
        self._field_bytes = 0
        self._refusal: HeadTooLarge | None = None
        self._linger: asyncio.TimerHandle | None = None

    def data_received(self, data: bytes) -> None:
        if self._refusal is not None:  # answered already: drop the rest until the close
            return
        in_head = self._in_head
        super().data_received(data)
        # A read that began and ended inside a head: httptools holds it until the field ends, so
        # the reads are counted here (a read that began in a body is not: at most one read more).
        if in_head and self._in_head and self._refusal is None:
            self._raw_head += len(data)
            if self._raw_head > MAX_HEAD_BYTES:
                self._refuse(TOO_LARGE)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._fields = self._field_bytes = 0

    def on_url(self, url: bytes) -> None:
        super().on_url(url)
        if len(self.url) > MAX_TARGET_BYTES:
            raise self._refusing(TOO_LONG)

    def on_header(self, name: bytes, value: bytes) -> None:
        # Raised inside the parser: the request is never handed to the app.
        self._fields += 1
        self._field_bytes += len(name) + len(value) + 4  # ": " and CRLF
        if self._fields > MAX_HEADER_FIELDS:
            raise self._refusing(TOO_MANY)
        if len(self.url) + self._field_bytes > MAX_HEAD_BYTES:
            raise self._refusing(TOO_LARGE)
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._in_head = False
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._in_head, self._raw_head = True, 0  # the next request on this connection

    def send_400_response(self, msg: str) -> None:
        # uvicorn answers every parser error with 400; a limit above raised one of ours inside it.
        if self._refusal is None:
            super().send_400_response(msg)
        else:
            self._answer(self._refusal)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._linger is not None:
            self._linger.cancel()
        super().connection_lost(exc)

    def _refusing(self, refusal: HeadTooLarge) -> HeadTooLarge:
        self._refusal = refusal
        return refusal

    def _refuse(self, refusal: HeadTooLarge) -> None:
        self._refusal = refusal
        self._answer(refusal)

    def _answer(self, refusal: HeadTooLarge) -> None:
        body = refusal.text.encode()
        head = [STATUS_LINE[refusal.status]]
        for name, value in self.server_state.default_headers:
            head += [name, b": ", value, b"\r\n"]
        head += [
            b"content-type: text/plain; charset=utf-8\r\n",
            b"content-length: %d\r\n" % len(body),
            b"connection: close\r\n\r\n",
        ]
        self.transport.write(b"".join(head) + body)
        if self.transport.can_write_eof():
            self.transport.write_eof()  # the answer is complete; the client may stop sending
        self._linger = self.loop.call_later(LINGER_SECONDS, self.transport.close)
