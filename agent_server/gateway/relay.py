"""Run one relayed /v1 request for an admitted caller: the seam every OpenAI-style surface shares.

``Exchange(gateway, caller, key, endpoint, version)`` is one admitted request. ``run(call)`` checks
the plan (``Gateway.entitle``), picks the caller's backend (the mock for sandbox keys, the router
for live ones), relays the call and records its usage for every outcome. It returns the ``Answer``
(JSON bytes, parsed data, usage) or, for a stream, a ``Streamed``: the backend's chunks with the
first batch already in hand (so a failure before any byte keeps its HTTP status), its usage recorded
once when it ends (200, the error's status, 499 when the client left, 401 when the key was
revoked), and the key re-checked at most once a second while it runs. A surface renders what it
gets: the /v1 routes pass the chunks' bytes on; a translating surface reads ``Chunk.data``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from contextlib import aclosing

from agent_server.foundation.errors import AgentError, AuthFailed
from agent_server.gateway.output_limits import check_output_tokens
from agent_server.gateway.request_log_bodies import Answer as Said
from agent_server.gateway.request_log_bodies import body_row, new_token
from agent_server.gateway.sandbox import check_sandbox_call
from agent_server.gateway.service import Caller, Gateway
from agent_server.llm.messages_bridge import relay_for
from agent_server.llm.router import SERVED, Router
from agent_server.llm.tokens import estimate
from agent_server.llm.types import Answer, Call, Chunk, LLMBackend, Usage

log = logging.getLogger("agentgate.gateway")
CLIENT_CLOSED = 499  # recorded status of a stream the client left before its end
KEY_CHECK_SECONDS = 1.0  # a revoked key's running stream ends within this (plus the key cache's TTL)


class Exchange:
    __slots__ = (
        "backend",
        "call",
        "caller",
        "endpoint",
        "gateway",
        "key",
        "model",
        "served",
        "ttft",
        "version",
    )

    def __init__(
        self, gateway: Gateway, caller: Caller, key: str | None, endpoint: str, version: str | None
    ) -> None:
        self.gateway, self.caller, self.key = gateway, caller, key
        self.endpoint, self.version = endpoint, version  # the usage row's endpoint and pinned version
        self.model = self.backend = ""
        self.call: Call | None = None  # for the stored request body of a key that keeps bodies
        self.served: LLMBackend | None = None  # the backend that answered (the router's choice)
        self.ttft: float | None = None  # a stream's milliseconds from admission to its first content

    async def refuse(self, err: AgentError) -> AgentError:
        """``err`` with the rate-limit headers, recorded as this request's outcome."""
        err.headers.update(self.caller.headers)
        await self.record(err.http_status, code=err.code, said=err)
        return err

    async def record(
        self,
        status: int,
        usage: Usage | None = None,
        *,
        stream: bool = False,
        code: str | None = None,
        said: Said = None,
    ) -> None:
        """The usage row (the request log's entry); ``said`` is the answer, stored as a body only
        for a key that keeps bodies."""
        principal, served, token = self.caller.principal, self.served, None
        if status == 500 and code is None:  # an unexpected failure: the client was told server_error
            code = AgentError.default_code
        if principal.log_bodies_days is not None:
            token = new_token()
            body = self.call.body if self.call is not None else None
            now, days = self.gateway.clock.now(), principal.log_bodies_days
            self.gateway.usage.keep_body(body_row(principal.tenant_id, token, body, said, now, days))
        await self.gateway.record(
            self.caller,
            self.endpoint,
            self.model,
            status,
            self.backend,
            prompt_tokens=usage.prompt_tokens if usage else 0,
            completion_tokens=usage.completion_tokens if usage else 0,
            stream=stream,
            api_version=self.version,
            error_code=code,
            ttft_ms=self.ttft,
            upstream=served.name if served is not None else None,
            model_served=getattr(served, "models", {}).get(self.model, self.model) if served else None,
            row_token=token,
        )

    async def run(self, call: Call, *, feature: str | None = None) -> Answer | Streamed:
        self.model, self.call = call.model, call
        try:
            gateway = self.gateway
            gateway.entitle(self.caller, call.model, stream=call.stream, feature=feature)
            check_output_tokens(gateway.models, call)  # max_tokens within the model's window
            if self.caller.principal.environment == "test":
                check_sandbox_call(gateway.models, call)  # what a real model would refuse (sandbox.py)
            base = gateway.llm_for(self.caller.principal, call.model)
            llm = relay_for(base, call)
            self.backend = llm.name
            if call.stream:
                chunks = llm.relay_stream(call)
                # Awaited before any byte is sent: a failure up to here (unknown model at the
                # router, upstream down, timeout) still gets its real HTTP status.
                first = await anext(chunks, None)
                self.ttft = round((time.perf_counter() - self.caller.started) * 1000, 3)
                self.served = SERVED.get() if isinstance(base, Router) else base
                return Streamed(self, call, first, chunks)
            answer = await llm.relay(call)
        except AgentError as err:
            raise await self.refuse(err) from None
        except Exception:
            await self.record(500)
            raise
        self.served = SERVED.get() if isinstance(base, Router) else base
        await self.record(200, answer.usage, said=answer.body)
        return answer


class Streamed:
    """A relayed stream: iterate it once, by chunk (``async for chunk in streamed``) or by the
    batches of one network read each (``streamed.batches()``, what a writer wants)."""

    def __init__(
        self, exchange: Exchange, call: Call, first: list[Chunk] | None, rest: AsyncIterator[list[Chunk]]
    ) -> None:
        self._exchange, self._call, self._first, self._rest = exchange, call, first, rest
        self._task: asyncio.Task[object] | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._check: asyncio.Future[None] | None = None
        self._waiting = self._revoked = False

    async def __aiter__(self) -> AsyncIterator[Chunk]:
        async with aclosing(self.batches()) as batches:  # type: ignore[type-var]
            async for batch in batches:
                for chunk in batch:
                    yield chunk

    async def batches(self) -> AsyncIterator[list[Chunk]]:
        status, usage, texts, code = CLIENT_CLOSED, None, [], None
        rest = self._rest
        self._task = asyncio.current_task()
        if self._exchange.key is not None:
            self._timer = asyncio.get_running_loop().call_later(KEY_CHECK_SECONDS, self._due)
        try:
            batch = self._first
            while batch is not None:
                for chunk in batch:
                    if chunk.usage is not None:
                        usage = chunk.usage
                    elif chunk.text:
                        texts.append(chunk.text)
                yield batch
                if self._revoked:
                    raise _revoked()
                self._waiting = True
                try:
                    batch = await anext(rest, None)
                except asyncio.CancelledError:
                    # Our own cancellation (the key was revoked) ends the stream with an error
                    # event; any other (the client left) goes on.
                    if not self._revoked or self._task is None or self._task.uncancel() > 0:
                        raise
                    raise _revoked() from None
                finally:
                    self._waiting = False
            status = 200
        except AgentError as err:
            status, code = err.http_status, err.code
            raise
        except Exception:
            status = 500
            raise
        finally:
            self._stop_checks()
            try:
                # Shielded: a client that went away cancels this generator, and its usage still counts.
                keeps = self._exchange.caller.principal.log_bodies_days is not None
                text = "".join(texts) if usage is None or keeps else ""
                used = usage or estimate(self._call, text)
                done = self._exchange.record(status, used, stream=True, code=code, said=text or None)
                await asyncio.shield(done)
            finally:
                await rest.aclose()  # type: ignore[attr-defined]

    def _due(self) -> None:
        self._timer = None
        self._check = asyncio.ensure_future(self._verify())

    async def _verify(self) -> None:
        exchange = self._exchange
        try:
            await exchange.gateway.keys.authenticate(exchange.key)
        except AuthFailed:
            self._revoked = True
            if self._waiting and self._task is not None:
                self._task.cancel()  # interrupts the wait for the upstream; _next turns it into 401
            return
        except Exception:
            log.warning("re-checking a streaming key failed; the stream goes on", exc_info=True)
        self._timer = asyncio.get_running_loop().call_later(KEY_CHECK_SECONDS, self._due)

    def _stop_checks(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        if self._check is not None and not self._check.done():
            self._check.cancel()


def _revoked() -> AuthFailed:
    return AuthFailed("The API key is no longer valid (revoked or expired); the stream was stopped.")
