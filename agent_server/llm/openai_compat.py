"""Any OpenAI-compatible upstream: one connection pool, streaming pass-through, bounded retries.

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
import json
import logging
import random
from collections.abc import AsyncIterator
from typing import Literal

import httpx

from agent_server.errors import AgentError, TimedOut, Unavailable, UpstreamFailed, ValidationFailed
from agent_server.llm.config import UpstreamConfig
from agent_server.llm.mock import count_prompt_tokens, count_tokens
from agent_server.llm.sse import StreamState, parse_usage, upstream_error
from agent_server.llm.transport import Exchange, HttpxExchange, PooledTransport
from agent_server.llm.types import ChatRequest, Completion, Delta, Usage

log = logging.getLogger("agentgate.llm")
TransportKind = Literal["pooled", "httpx"]
_OURS = {"model", "stream", "stream_options"}
_USAGE = {"include_usage": True}


class OpenAICompatBackend:
    """``POST {base_url}/chat/completions`` with the upstream's key; public model ids are mapped."""

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
        self._url = httpx.URL(f"{config.base_url}/chat/completions")
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
        if transport is None:
            transport = (
                PooledTransport(max_connections=size, keepalive_expiry=30)
                if transport_kind == "pooled"
                else httpx.AsyncHTTPTransport(
                    limits=httpx.Limits(max_connections=size, max_keepalive_connections=size)
                )
            )
        self._transport = transport
        url = self._url
        self._origin = (url.scheme, url.host, url.port or (443 if url.scheme == "https" else 80))
        lines = [f"POST {url.raw_path.decode()} HTTP/1.1", f"Host: {url.netloc.decode()}"]
        lines += [f"{key}: {value}" for key, value in headers.items()]
        self._head = ("\r\n".join(lines) + "\r\nContent-Length: ").encode()
        self._model_json = {public: json.dumps(upstream) for public, upstream in self.models.items()}

    def __repr__(self) -> str:
        return f"OpenAICompatBackend(name={self.name!r}, url={str(self._url)!r})"

    async def aclose(self) -> None:
        await self._transport.aclose()

    def _body(self, request: ChatRequest, stream: bool) -> bytes:
        """The upstream body: our model id and stream fields first, then the caller's request as
        pydantic serialises it (unknown OpenAI fields included, extra="allow"), without a dict."""
        model = self._model_json.get(request.model) or json.dumps(request.model)
        head = f'{{"model":{model},"stream":{"true" if stream else "false"}'
        if stream:
            options = (request.model_extra or {}).get("stream_options")
            options = {**options, "include_usage": True} if isinstance(options, dict) else _USAGE
            head += f',"stream_options":{json.dumps(options, separators=(",", ":"))}'
        rest = request.model_dump_json(exclude_none=True, exclude=_OURS)
        return (head + ("," + rest[1:] if len(rest) > 2 else "}")).encode()

    def _scrub(self, text: str) -> str:
        return text.replace(self._secret, "[redacted]") if self._secret else text

    async def _open(self, content: bytes) -> Exchange | HttpxExchange:
        if type(self._transport) is PooledTransport:
            data = self._head + b"%d\r\n\r\n" % len(content) + content
            exchange = await self._transport.exchange(self._origin, data, self._timeouts)
            if exchange.header(b"content-encoding") not in (None, "identity"):
                await exchange.aclose()
                raise UpstreamFailed(
                    f"upstream {self.name} compressed its answer; set AGENTGATE_LLM_HTTP_TRANSPORT=httpx"
                )
            return exchange
        request = httpx.Request("POST", self._url, headers=self._headers, content=content)
        request.extensions = self._extensions
        return HttpxExchange(await self._transport.handle_async_request(request))

    async def _send(self, content: bytes) -> Exchange | HttpxExchange:
        """A 2xx response with its body unread, or the mapped error after bounded retries."""
        attempt = 0
        while True:
            try:
                response = await self._open(content)
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
                error = await self._status_error(response)
                if response.status < 500:
                    raise error
            if attempt >= self._retries:
                raise error
            attempt += 1
            log.info("llm upstream %s: %s; retry %d of %d", self.name, error.message, attempt, self._retries)
            await asyncio.sleep(self._backoff * (0.5 + self._rng.random()))

    async def _status_error(self, response: Exchange | HttpxExchange) -> AgentError:
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
        return status_error(self.name, status, detail, response.header(b"retry-after"))

    async def complete(self, request: ChatRequest) -> Completion:
        response = await self._send(self._body(request, False))
        try:
            raw = await response.read()
        except httpx.TimeoutException:
            raise TimedOut(f"upstream {self.name} did not answer in time") from None
        except httpx.TransportError as exc:
            raise UpstreamFailed(f"upstream {self.name} failed: {type(exc).__name__}") from None
        try:
            data = json.loads(raw)
            if "error" in data and not data.get("choices"):
                raise UpstreamFailed(f"upstream {self.name} error: {self._scrub(upstream_error(data))}")
            choice = data["choices"][0]
            message = choice.get("message") or {}
            content = message.get("content") or ""
            usage = data.get("usage")
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            raise UpstreamFailed(f"upstream {self.name} sent an unreadable completion") from None
        return Completion(
            content,
            choice.get("finish_reason") or "stop",
            parse_usage(usage) or Usage(count_prompt_tokens(request), count_tokens(content)),
            request.model,
            message.get("tool_calls"),
        )

    async def stream(self, request: ChatRequest) -> AsyncIterator[Delta]:
        response = await self._send(self._body(request, True))
        state = StreamState(self.name)
        feed = state.feed
        pending = b""
        try:
            # Lines are split here rather than by aiter_lines (text decoding, charset sniffing):
            # each network chunk is split once and every complete line handed on at once. Reading
            # goes on after [DONE] so the body ends and the connection returns to the pool.
            async for chunk in response.chunks():
                if b"\n" not in chunk:
                    pending += chunk
                    continue
                *lines, pending = (pending + chunk).split(b"\n")
                deltas = [delta for line in lines if (delta := feed(line)) is not None]
                last = len(deltas) - 1
                for i, delta in enumerate(deltas):
                    # feed() yields content and tool-call pieces only; all but the last are "more".
                    yield Delta(delta.content, None, None, delta.tool_calls, True) if i < last else delta
            if pending:
                delta = feed(pending)
                if delta is not None:
                    yield delta
        except httpx.TimeoutException:
            if not state.done:
                raise TimedOut(f"upstream {self.name} stalled mid-stream", code="upstream_timeout") from None
        except httpx.TransportError as exc:
            if not state.done:
                raise UpstreamFailed(f"upstream {self.name} stream broke: {type(exc).__name__}") from None
        finally:
            await response.aclose()
        yield state.final(request)


def status_error(name: str, status: int, detail: str, retry_after: str | None) -> AgentError:
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
    return UpstreamFailed(f"upstream {name} failed with HTTP {status}")
