"""What the relayed /v1 routes share: the fast route class, the request flow, the answer.

Order per request (spec 5.1): API key, rate limit, scope (``Gateway.admit``), then the body, plan
entitlements and the backend (``agent_server/gateway/relay.py``). Every response after admission,
errors included, carries the X-RateLimit-* headers. The body is parsed here rather than by
FastAPI, so a bad key is 401 even when the body is bad too, and a bad body is a 400 in the gateway
envelope, never a 422.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from fastapi import Request, Response
from fastapi.routing import APIRoute
from pydantic import ValidationError
from starlette.routing import request_response

from agent_server.foundation.errors import AgentError
from agent_server.gateway.bodies import BODIES, read_call
from agent_server.gateway.chat import OPENAI_STREAM, StreamStyle, event_stream
from agent_server.gateway.relay import Exchange, Streamed
from http_facade.errors import validation_error
from http_facade.gateway_deps import api_key_of
from http_facade.middleware import MODEL_KEY
from http_facade.streaming import EventStreamResponse
from wellknown.event_stream import streamed_answer

JSON = "application/json"
# no-cache: nothing between us and the client may store it; X-Accel-Buffering: nginx must not buffer.
SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
PINNED_VERSION_KEY = "api_version"  # the edge (http_facade/middleware.py) leaves a pinned version here


class Endpoint(NamedTuple):
    """One relayed endpoint: its path upstream, key scope, usage name, plan feature, stream style."""

    path: str
    scope: str
    usage_name: str
    feature: str | None = None
    style: StreamStyle = OPENAI_STREAM


def pinned_version(request: Request) -> str | None:
    """The API-Version the client pinned, for the usage row; None means the current one, which
    ``Gateway.record`` fills in (a scope read is all this costs a request)."""
    state = request.scope.get("state")
    return state.get(PINNED_VERSION_KEY) if state else None


class DirectRoute(APIRoute):
    """A route whose endpoint takes the Request and returns a Response, called as it is.

    FastAPI's handler (dependency solving, query parsing, response serialisation, exit stacks) costs
    about 8 % of a chat request's CPU and does nothing for an endpoint that reads its own body and
    key; the OpenAPI description still comes from the route as usual.
    """

    def __init__(self, path: str, endpoint: Callable[..., Any], **options: Any) -> None:
        super().__init__(path, endpoint, **options)
        # Starlette's wrapper: FastAPI's also opens two exit stacks per request for dependencies.
        self.app = request_response(endpoint)


async def relay_request(request: Request, endpoint: Endpoint) -> Response:
    """Admit, read the body, relay; the JSON answer or the event stream, as the upstream sent it."""
    gateway = request.app.state.gateway
    key = api_key_of(request)
    caller = await gateway.admit(key, endpoint.scope)
    exchange = Exchange(gateway, caller, key, endpoint.usage_name, pinned_version(request))
    try:
        call = read_call(endpoint.path, await request.body(), int(gateway.clock.now()))
    except ValidationError as exc:
        raise await exchange.refuse(validation_error(list(exc.errors(include_url=False)))) from None
    except AgentError as err:
        raise await exchange.refuse(err) from None
    except Exception:
        await exchange.record(500)
        raise
    request.scope.setdefault("state", {})[MODEL_KEY] = call.model  # the metrics series of this request
    result = await exchange.run(call, feature=endpoint.feature)
    if type(result) is Streamed:
        return EventStreamResponse(
            event_stream(result, endpoint.style), headers={**caller.headers, **SSE_HEADERS}
        )
    return Response(result.body, media_type=JSON, headers=caller.headers)  # type: ignore[union-attr]


def request_body(path: str, *, streamed: bool = False) -> dict[str, Any]:
    """The OpenAPI ``requestBody`` of a relayed endpoint: the checked fields, others allowed; with
    ``streamed``, its 200 is declared as the event stream ``stream: true`` asks for, besides JSON."""
    schema = _inline_refs(BODIES[path].json_schema())
    extra: dict[str, Any] = {"requestBody": {"required": True, "content": {JSON: {"schema": schema}}}}
    if streamed:
        extra["responses"] = streamed_answer("The JSON answer, or its server-sent events with stream: true.")
    return extra


def _inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """The request schema with its $defs inlined, for the OpenAPI document."""
    defs = schema.pop("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref", "")
            if ref.startswith("#/$defs/"):
                return walk(defs[ref.removeprefix("#/$defs/")])
            return {key: walk(value) for key, value in node.items()}
        if isinstance(node, list):
            return [walk(item) for item in node]
        return node

    return walk(schema)
