"""The request flow of the gateway's added surfaces: /v1/messages, /v1/responses, /v2 and the cached /v1 routes.

It is the relay flow of ``gateway_relay.relay_request`` (admit, read the body, relay, answer) with
what a surface changes: how the key is read, how the body becomes a call and what is checked
after, what the client gets instead of the relayed answer (the Responses API stores it first),
the style of a stream's in-band error, and the response cache. The /v1 routes keep
``relay_request`` itself while the cache is off, so their hot path carries none of this.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import replace
from typing import NamedTuple

from fastapi import Request, Response
from pydantic import ValidationError

from agent_server.foundation.errors import AgentError
from agent_server.gateway.chat import EventSource, StreamStyle, event_stream
from agent_server.gateway.relay import Exchange, Streamed
from agent_server.gateway.response_cache import ResponseCache, run_cached
from agent_server.gateway.service import Caller, Gateway
from agent_server.llm.types import Answer, Call, RawHeaders
from http_facade.errors import validation_error
from http_facade.gateway_deps import api_key_of
from http_facade.middleware import MODEL_KEY
from http_facade.routes.gateway_relay import JSON, SSE_HEADERS, Endpoint, pinned_version
from http_facade.streaming import EventStreamResponse

CACHE_HEADER = "X-Agentgate-Cache"  # hit, miss or bypass in answers; no-store in a request skips the cache
Reader = Callable[[bytes, int], Call]
Check = Callable[[Gateway, Caller, Call], Awaitable[Call]]
Head = Iterable[tuple[bytes, bytes]]
# After the relay: what the client gets instead (the Responses API stores its answers here).
After = Callable[[Caller, Call, Answer | Streamed], Awaitable[Answer | EventSource]]


class Surface(NamedTuple):
    endpoint: Endpoint  # key scope, usage name, plan feature, stream style
    read: Reader  # raw body and the clock's second -> the call (pydantic's ValidationError if bad)
    key_of: Callable[[Request], str | None] = api_key_of
    check: Check | None = None  # after the body is read: may refuse or change the call
    passed: Callable[[Head], RawHeaders] | None = None  # headers for a native upstream
    after: After | None = None


def skips_cache(request: Request) -> bool:
    """``X-Agentgate-Cache: no-store``, or ``Cache-Control`` with ``no-store`` or ``no-cache``."""
    for name, value in request.scope["headers"]:
        if name == b"x-agentgate-cache" and value.strip().lower() == b"no-store":
            return True
        if name == b"cache-control" and (b"no-store" in value.lower() or b"no-cache" in value.lower()):
            return True
    return False


async def serve(
    request: Request,
    surface: Surface,
    *,
    cache: ResponseCache | None = None,
    style: StreamStyle | None = None,
    headers: dict[str, str] | None = None,
) -> Response:
    """One request of a surface; errors are raised for the surface to render in its shape."""
    gateway: Gateway = request.app.state.gateway
    endpoint = surface.endpoint
    key = surface.key_of(request)
    caller = await gateway.admit(key, endpoint.scope)
    exchange = Exchange(gateway, caller, key, endpoint.usage_name, pinned_version(request))
    try:
        call = surface.read(await request.body(), int(gateway.clock.now()))
        exchange.model, exchange.call = call.model, call  # a refusal below is recorded with them
        if surface.passed is not None:
            call = replace(call, upstream_headers=surface.passed(request.scope["headers"]))
        if surface.check is not None:
            call = await surface.check(gateway, caller, call)
    except ValidationError as exc:
        raise await exchange.refuse(validation_error(list(exc.errors(include_url=False)))) from None
    except AgentError as err:
        raise await exchange.refuse(err) from None
    except Exception:
        await exchange.record(500)
        raise
    request.scope.setdefault("state", {})[MODEL_KEY] = call.model  # the metrics series of this request
    answer_headers = {**caller.headers, **(headers or {})}
    if cache is None:
        result = await exchange.run(call, feature=endpoint.feature)
    else:
        result, outcome = await run_cached(
            exchange, cache, call, feature=endpoint.feature, bypass=skips_cache(request)
        )
        answer_headers[CACHE_HEADER] = outcome
    answer: Answer | EventSource = result
    if surface.after is not None:
        answer = await surface.after(caller, call, result)
    if isinstance(answer, Answer):
        return Response(answer.body, media_type=JSON, headers=answer_headers)
    body = event_stream(answer, style or endpoint.style)
    return EventStreamResponse(body, headers={**answer_headers, **SSE_HEADERS})
