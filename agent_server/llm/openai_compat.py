"""Any OpenAI-compatible upstream: one connection pool, a faithful relay, bounded retries.

The relay (``relay``/``relay_stream``) sends the client's body with the upstream's model id and
hands the answer on as the upstream's bytes, the model id put back (``llm/sse.py``); chat
completions, legacy completions, embeddings and the Responses API go the same way, each to its
path under the base URL. The typed seam (``complete``/``stream``) reads choice 0 of the same relay.

Each backend owns one connection pool (``PooledTransport`` by default, httpx's own
``AsyncHTTPTransport`` with ``AGENTGATE_LLM_HTTP_TRANSPORT=httpx``) and talks to it directly:
the request head is rendered once at start, so a request costs one bytes concatenation and one
``write``. The ``httpx.AsyncClient`` layer (URL merging, cookie jar, auth and redirect loops,
Request/Response models) measured ~125 us per request here, and we use none of it
(docs/performance.md).

Retries (same backend) happen only before the response is handed on: on a connection error or a
5xx status, ``retries`` times with a short jittered backoff. A timeout is not retried here (it
already cost a full timeout); the router falls back to the next backend instead.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import AsyncIterator
from typing import Literal

import httpx
from pydantic_core import from_json, to_json

from agent_server.foundation.errors import AgentError, TimedOut, Unavailable, UpstreamFailed, ValidationFailed
from agent_server.foundation.request_context import REQUEST_ID
from agent_server.foundation.settings_llm import UpstreamConfig
from agent_server.llm.adapter import chat_call, completion_of, typed_deltas
from agent_server.llm.dialects import DIALECTS
from agent_server.llm.sse import EventReader, RelayState, StreamState, upstream_error
from agent_server.llm.tokens import estimate
from agent_server.llm.transport import Exchange, HttpxExchange, PooledTransport, upstream_transport
from agent_server.llm.types import (
    CHAT,
    COMPLETIONS,
    EMBEDDINGS,
    RESPONSES,
    Answer,
    Call,
    ChatRequest,
    Chunk,
    Completion,
    Delta,
    RawHeaders,
)
from agent_server.llm.upstream_telemetry import observed_relay, observed_stream
from agent_server.llm.wire import ModelRewriter

log = logging.getLogger("agentgate.llm")
TransportKind = Literal["pooled", "httpx"]
_ENDPOINTS = (CHAT, COMPLETIONS, EMBEDDINGS, RESPONSES)
# Upstreams are always asked for the usage of a stream, to meter it (llm/sse.py drops the usage
# chunk again when the client did not ask for it).
_USAGE_STREAMS = frozenset({CHAT, COMPLETIONS})


class OpenAICompatBackend:
    """``POST {base_url}/<endpoint>`` with the upstream's key; public model ids are mapped."""

    def __init__(
        self,
        config: UpstreamConfig,
        *,
        connect_timeout: float = 5.0,
        read_timeout: float = 30.0,
        retries: int = 1,
        backoff: float = 0.1,
        max_connections: int = 1000,
        rng: random.Random | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        transport_kind: TransportKind = "pooled",
    ) -> None:
        self.name = config.name
        self.models = dict(config.models)
        self._urls = {endpoint: httpx.URL(f"{config.base_url}/{endpoint}") for endpoint in _ENDPOINTS}
        self._url = self._urls[CHAT]
        self._secret = config.api_key.get_secret_value()
        self._retries = max(0, retries)
        self._backoff = backoff
        self._rng = rng or random.Random()
        # identity: a compressed SSE stream would be held back by the compressor, and decoding costs CPU.
        headers = {"Accept": "application/json", "Accept-Encoding": "identity", "User-Agent": "agentgate"}
        headers["Content-Type"] = "application/json"
        if self._secret:
            headers["Authorization"] = f"Bearer {self._secret}"
        self._headers = httpx.Headers(headers)
        connect = config.connect_timeout_seconds or connect_timeout
        read = config.read_timeout_seconds or read_timeout
        # read bounds every read, the first byte and each stream chunk: a stall ends after `read`.
        self._timeouts = {"connect": connect, "read": read, "write": read, "pool": connect}
        self._extensions = {"timeout": self._timeouts}
        size = config.max_connections or max_connections
        # Ours, or httpx's when asked or behind an https/SOCKS proxy; proxy and TLS trust per upstream.
        self._transport = transport or upstream_transport(config, transport_kind, size)
        url = self._url
        self._origin = (url.scheme, url.host, url.port or (443 if url.scheme == "https" else 80))
        fields = "".join(f"{key}: {value}\r\n" for key, value in headers.items())
        # The request head of each endpoint, rendered once: a request costs one concatenation.
        self._heads = {
            endpoint: (
                f"POST {url.raw_path.decode()} HTTP/1.1\r\nHost: {url.netloc.decode()}\r\n{fields}Content-Length: "
            ).encode()
            for endpoint, url in self._urls.items()
        }

    def __repr__(self) -> str:
        return f"OpenAICompatBackend(name={self.name!r}, url={str(self._url)!r})"

    async def aclose(self) -> None:
        await self._transport.aclose()

    def _body(self, call: Call) -> bytes:
        """The client's body with the upstream's model id (and, streaming, the usage asked for)."""
        body = call.body.copy()
        body["model"] = self.models.get(call.model, call.model)
        if call.stream:
            body["stream"] = True
            if call.endpoint in _USAGE_STREAMS:
                options = body.get("stream_options")
                body["stream_options"] = (
                    {**options, "include_usage": True}
                    if isinstance(options, dict)
                    else {"include_usage": True}
                )
        return to_json(body)

    def _scrub(self, text: str) -> str:
        return text.replace(self._secret, "[redacted]") if self._secret else text

    async def _open(self, endpoint: str, content: bytes, extra: RawHeaders = ()) -> Exchange | HttpxExchange:
        request_id = REQUEST_ID.get()  # the client's request, named in the upstream's logs too
        if type(self._transport) is PooledTransport:
            head = self._heads[endpoint] + b"%d\r\n" % len(content)
            if request_id is not None:
                head += b"X-Request-Id: %s\r\n" % request_id.encode()
            for name, value in extra:
                head += b"%s: %s\r\n" % (name, value)
            data = head + b"\r\n" + content
            return await self._transport.exchange(self._origin, data, self._timeouts)  # decodes gzip itself
        headers = self._headers if request_id is None else {**self._headers, "X-Request-Id": request_id}
        if extra:
            headers = {**headers, **{name.decode(): value.decode() for name, value in extra}}
        request = httpx.Request("POST", self._urls[endpoint], headers=headers, content=content)
        request.extensions = self._extensions
        return HttpxExchange(await self._transport.handle_async_request(request))

    async def _send(self, endpoint: str, content: bytes, extra: RawHeaders = ()) -> Exchange | HttpxExchange:
        """A 2xx response with its body unread, or the mapped error after bounded retries; ``extra``
        are request headers of this call only (checked values: no line breaks)."""
        attempt = 0
        while True:
            try:
                response = await self._open(endpoint, content, extra)
            except httpx.ConnectTimeout:
                error: AgentError = Unavailable(f"upstream {self.name} did not accept a connection in time")
            except httpx.PoolTimeout:
                raise Unavailable(f"no free connection to upstream {self.name}", retry_after=1) from None
            except httpx.TimeoutException:
                raise TimedOut(f"upstream {self.name} did not answer in time") from None
            except httpx.ConnectError:
                error = Unavailable(f"upstream {self.name} refused the connection")
            except httpx.TransportError as exc:
                error = UpstreamFailed(f"upstream {self.name} failed: {type(exc).__name__}")
            else:
                if response.status < 400:
                    return response
                error = await self._status_error(response, endpoint)
                if response.status < 500:
                    raise error
            if attempt >= self._retries:
                raise error
            attempt += 1
            log.info("llm upstream %s: %s; retry %d of %d", self.name, error.message, attempt, self._retries)
            await asyncio.sleep(self._backoff * (0.5 + self._rng.random()))

    async def _status_error(self, response: Exchange | HttpxExchange, endpoint: str) -> AgentError:
        try:
            detail = self._scrub(upstream_error(await response.read()))
        except httpx.HTTPError:
            detail = ""
            await response.aclose()
        status = response.status
        if status in (401, 403):
            log.error(
                "llm upstream %s rejected our credentials (HTTP %d): check its api_key", self.name, status
            )
        return status_error(self.name, status, detail, response.header(b"retry-after"), endpoint)

    @observed_relay  # the upstream histogram; a GenAI span with traces on
    async def relay(self, call: Call) -> Answer:
        response = await self._send(call.endpoint, self._body(call))
        try:
            raw = await response.read()
        except httpx.TimeoutException:
            raise TimedOut(f"upstream {self.name} did not answer in time") from None
        except httpx.TransportError as exc:
            raise UpstreamFailed(f"upstream {self.name} failed: {type(exc).__name__}") from None
        try:
            data = from_json(raw)
        except ValueError:
            data = None
        if type(data) is not dict:
            raise UpstreamFailed(f"upstream {self.name} sent an unreadable answer")
        dialect = DIALECTS[call.endpoint]
        if dialect.failed(data):
            raise UpstreamFailed(f"upstream {self.name} error: {self._scrub(upstream_error(data))}")
        try:
            body = ModelRewriter(call.model)(raw, data, dialect.swap_model(data, call.model))
            usage = dialect.usage(data) or estimate(call, dialect.answer_text(data))
        except (AttributeError, TypeError, KeyError):  # e.g. "choices" that are no objects
            raise UpstreamFailed(f"upstream {self.name} sent an unreadable answer") from None
        return Answer(body, data, usage)

    @observed_stream
    async def relay_stream(self, call: Call) -> AsyncIterator[list[Chunk]]:
        response = await self._send(call.endpoint, self._body(call))
        async for batch in self._pump(response, RelayState(self.name, call)):
            yield batch

    async def _pump(
        self, response: Exchange | HttpxExchange, state: StreamState
    ) -> AsyncIterator[list[Chunk]]:
        """Feed an upstream's event stream to ``state``, one batch of chunks per read. A break after
        the last event is no failure; reading goes on after it so the body ends and the connection
        returns to the pool."""
        reader = EventReader()
        tail: list[Chunk] = []
        try:
            async for piece in response.chunks():
                if batch := state.feed(reader.feed(piece)):
                    yield batch
            tail = state.feed(reader.close())
        except httpx.TimeoutException:
            if not state.done:
                raise TimedOut(f"upstream {self.name} stalled mid-stream", code="upstream_timeout") from None
        except httpx.TransportError as exc:
            if not state.done:
                raise UpstreamFailed(f"upstream {self.name} stream broke: {type(exc).__name__}") from None
        finally:
            await response.aclose()
        if tail := tail + state.end():
            yield tail

    async def complete(self, request: ChatRequest) -> Completion:
        return completion_of(await self.relay(chat_call(request)), request)

    def stream(self, request: ChatRequest) -> AsyncIterator[Delta]:
        return typed_deltas(self.relay_stream(chat_call(request, stream=True)))


def status_error(
    name: str, status: int, detail: str, retry_after: str | None, endpoint: str = CHAT
) -> AgentError:
    """An upstream 4xx/5xx as our error: the caller's fault (400) or ours/theirs (5xx)."""
    if status in (400, 413, 422):
        return ValidationFailed(f"the upstream model rejected the request: {detail or f'HTTP {status}'}")
    if status in (401, 403):
        # Our configuration is wrong; the caller learns nothing about the upstream's credentials.
        return UpstreamFailed(f"upstream {name} is misconfigured", code="upstream_auth")
    if status in (408, 504):
        return TimedOut(f"upstream {name} timed out (HTTP {status})")
    if status in (429, 503):
        seconds = int(retry_after) if retry_after and retry_after.isdigit() else 1
        return Unavailable(f"upstream {name} is overloaded (HTTP {status})", retry_after=seconds)
    if status in (404, 405):
        return UpstreamFailed(f"upstream {name} does not serve /{endpoint} (HTTP {status})")
    return UpstreamFailed(f"upstream {name} failed with HTTP {status}")
