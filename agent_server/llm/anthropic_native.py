"""An Anthropic-compatible upstream (``"dialect": "anthropic"`` in AGENTGATE_UPSTREAMS).

``POST /v1/messages`` passes to it as the client sent it, but for the model id: the body goes to
``{base_url}/messages`` with the upstream's key as ``x-api-key``, the client's ``anthropic-beta`` and
``anthropic-version`` (else ``2023-06-01``), and the answer or each event comes back as the
upstream's bytes with our public model id put back. The connection pool, retries and error mapping are those of every upstream (``OpenAICompatBackend``);
only the request head and the reading of answers differ. It serves the Messages API only: any
other call is a 502 for this backend, so a route falls back to its next one.

Usage is read from the answer, or from a stream's ``message_start`` (input) and ``message_delta``
(output, cumulative); input counts the prompt-cache tokens too (``cache_creation_input_tokens``,
``cache_read_input_tokens``), since they are billed input.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
from pydantic import SecretStr
from pydantic_core import from_json

from agent_server.foundation.errors import TimedOut, UpstreamFailed
from agent_server.foundation.settings_llm import UpstreamConfig
from agent_server.llm.anthropic_translate import MESSAGES, prompt_tokens
from agent_server.llm.openai_compat import OpenAICompatBackend
from agent_server.llm.sse import Event, upstream_error
from agent_server.llm.tokens import count_tokens
from agent_server.llm.types import Answer, Call, Chunk, RawHeaders, Usage
from agent_server.llm.upstream_telemetry import observed_relay, observed_stream
from agent_server.llm.wire import ModelRewriter, sse

ANTHROPIC_VERSION = "2023-06-01"  # the API version every Anthropic-compatible server accepts
_VERSION = (b"anthropic-version", ANTHROPIC_VERSION.encode())
Data = dict[str, Any]
_OPENING = frozenset({"message_start", "content_block_start", "ping"})


def upstream_class(config: UpstreamConfig) -> type[OpenAICompatBackend]:
    """The backend class of an upstream, by its dialect."""
    return AnthropicBackend if config.dialect == "anthropic" else OpenAICompatBackend


def native_usage(raw: object) -> Usage | None:
    if type(raw) is not dict or type(raw.get("input_tokens")) is not int:
        return None
    cached = sum(
        v for k in ("cache_creation_input_tokens", "cache_read_input_tokens") if type(v := raw.get(k)) is int
    )
    output = raw.get("output_tokens")
    return Usage(raw["input_tokens"] + cached, output if type(output) is int else 0)


def _head(call: Call) -> RawHeaders:
    """The client's anthropic-beta and anthropic-version (gateway_messages.py), the version defaulted."""
    passed = call.upstream_headers
    if any(name == b"anthropic-version" for name, _ in passed):
        return passed
    return (_VERSION, *passed)


def _text(data: Data) -> str:
    return " ".join(
        b.get("text", "") for b in data.get("content") or () if type(b) is dict and b.get("type") == "text"
    )


class AnthropicBackend(OpenAICompatBackend):
    serves_messages = True  # messages_bridge.relay_for passes Messages calls to it unchanged

    def __init__(self, config: UpstreamConfig, **options: Any) -> None:
        # The parent renders OpenAI request heads (a Bearer key, every OpenAI path); this upstream
        # is keyed by x-api-key and served at /messages, so its one head is rendered here.
        super().__init__(config.model_copy(update={"api_key": SecretStr("")}), **options)
        self._secret = config.api_key.get_secret_value()  # still scrubbed from upstream messages
        url = httpx.URL(f"{config.base_url}/{MESSAGES}")
        headers = {
            "Accept": "application/json",
            "Accept-Encoding": "identity",
            "User-Agent": "agentgate",
            "Content-Type": "application/json",
        }
        if self._secret:
            headers["x-api-key"] = self._secret
        self._headers = httpx.Headers(headers)
        self._urls, self._url = {MESSAGES: url}, url
        fields = "".join(f"{key}: {value}\r\n" for key, value in headers.items())
        self._heads = {
            MESSAGES: f"POST {url.raw_path.decode()} HTTP/1.1\r\nHost: {url.netloc.decode()}\r\n{fields}Content-Length: ".encode()
        }

    def __repr__(self) -> str:
        return f"AnthropicBackend(name={self.name!r}, url={str(self._url)!r})"

    def _served(self, call: Call) -> None:
        if call.endpoint != MESSAGES:
            raise UpstreamFailed(f"upstream {self.name} serves the Messages API only, not /{call.endpoint}")

    @observed_relay  # the upstream histogram and span, as for every upstream
    async def relay(self, call: Call) -> Answer:
        self._served(call)
        response = await self._send(MESSAGES, self._body(call), _head(call))
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
        if data.get("type") == "error":
            raise UpstreamFailed(f"upstream {self.name} error: {self._scrub(upstream_error(data))}")
        found, data["model"] = data.get("model"), call.model
        body = ModelRewriter(call.model)(raw, data, found)
        usage = native_usage(data.get("usage")) or Usage(prompt_tokens(call.body), count_tokens(_text(data)))
        return Answer(body, data, usage)

    @observed_stream
    async def relay_stream(self, call: Call) -> AsyncIterator[list[Chunk]]:
        self._served(call)
        response = await self._send(MESSAGES, self._body(call), _head(call))
        async for batch in self._pump(response, NativeEvents(self.name, call)):
            yield batch


class NativeEvents:
    """One native stream: the events pass as sent (model id replaced); the opening ones are held
    until content follows, so a failed upstream can still be replaced by the next one."""

    __slots__ = ("_call", "_held", "_input", "_name", "_open", "_rewrite", "_texts", "_usage", "done")

    def __init__(self, name: str, call: Call) -> None:
        self._name, self._call = name, call
        self._rewrite = ModelRewriter(call.model)
        self._held: list[Chunk] = []
        self._open = False
        self._input: int | None = None
        self._usage: Usage | None = None
        self._texts: list[str] = []
        self.done = False  # message_stop seen: the rest of the body is moot

    def feed(self, events: list[Event]) -> list[Chunk]:
        out: list[Chunk] = []
        for event, payload in events:
            chunk, opening = self._chunk(event, payload)
            if self._open:
                out.append(chunk)
            elif opening:
                self._held.append(chunk)
            else:
                self._open = True
                out += [*self._held, chunk]
                self._held = []
        return out

    def _chunk(self, event: bytes | None, payload: bytes) -> tuple[Chunk, bool]:
        try:
            data = from_json(payload)
        except ValueError:
            data = None
        if type(data) is not dict:
            raise UpstreamFailed(f"upstream {self._name} sent an unreadable stream event")
        kind = data.get("type")
        if kind == "error" or event == b"error":
            raise UpstreamFailed(f"upstream {self._name} error: {upstream_error(data)}")
        raw, usage, text = payload, None, ""
        if kind == "message_start" and type(message := data.get("message")) is dict:
            found, message["model"] = message.get("model"), self._call.model
            raw = self._rewrite(payload, data, found)
            if started := native_usage(message.get("usage")):
                self._input = started.prompt_tokens
        elif kind == "content_block_delta" and type(delta := data.get("delta")) is dict:
            text = delta.get("text") or delta.get("partial_json") or ""
            text = text if type(text) is str else ""
            self._texts.append(text)
        elif kind == "message_delta" and type(counts := data.get("usage")) is dict:
            output = counts.get("output_tokens")
            late = native_usage(counts) if "input_tokens" in counts else None
            prompt = late.prompt_tokens if late else self._input
            usage = self._usage = Usage(
                prompt if prompt is not None else prompt_tokens(self._call.body),
                output if type(output) is int else 0,
            )
        elif kind == "message_stop":
            self.done = True
        name = event or (kind.encode() if type(kind) is str else None)
        return Chunk(sse(raw, name), data, usage, text), kind in _OPENING

    def end(self) -> list[Chunk]:
        """The held events, and the usage when the upstream sent none; UpstreamFailed when the
        stream ended before ``message_stop``."""
        if not self.done:
            raise UpstreamFailed(f"upstream {self._name} stream ended before it finished")
        out, self._held = self._held, []
        if self._usage is None:
            prompt = self._input if self._input is not None else prompt_tokens(self._call.body)
            out.append(Chunk(b"", None, Usage(prompt, count_tokens(" ".join(self._texts)))))
        return out
