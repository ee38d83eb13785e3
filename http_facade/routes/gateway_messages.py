"""The Anthropic Messages API: POST /v1/messages and POST /v1/messages/count_tokens.

Any Anthropic client works with only its base URL changed: the key is read from ``x-api-key`` (or
``Authorization: Bearer``), ``anthropic-version`` and ``anthropic-beta`` go on to an
Anthropic-compatible upstream (``passed_headers``), and every error of these routes is in
Anthropic's shape (``agent_server/gateway/anthropic_errors.py``). A message is relayed like chat
completions (``gateway_surface.serve``): natively to an Anthropic-compatible upstream, translated
for the others and the sandbox mock (``agent_server/llm/messages_bridge.py``); metered as
``messages``.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import APIRouter, Request, Response
from pydantic import ValidationError
from pydantic_core import to_json

from agent_server.foundation.errors import AgentError
from agent_server.foundation.request_context import current_request_id
from agent_server.gateway.anthropic_body import (
    BETA_PATTERN,
    COUNT_BODY,
    MAX_HEADER,
    MESSAGES_BODY,
    VERSION_PATTERN,
    passed_headers,
    read_count_body,
    read_messages_call,
)
from agent_server.gateway.anthropic_errors import ANTHROPIC_STREAM, anthropic_error
from agent_server.gateway.relay import Exchange
from agent_server.gateway.service import Gateway
from agent_server.llm.anthropic_translate import MESSAGES, prompt_tokens
from http_facade.errors import validation_error
from http_facade.gateway_deps import api_key_of
from http_facade.routes.gateway_relay import JSON, DirectRoute, Endpoint, _inline_refs, pinned_version
from http_facade.routes.gateway_surface import Surface, serve
from wellknown.event_stream import EVENT_STREAM, SSE
from wellknown.oauth import with_bearer_challenge

log = logging.getLogger("agentgate.gateway")
router = APIRouter(tags=["gateway"], route_class=DirectRoute)
SURFACE = Surface(
    Endpoint(MESSAGES, "chat", "messages", None, ANTHROPIC_STREAM), read_messages_call, passed=passed_headers
)
COUNT_USAGE = "messages.count_tokens"
ANTHROPIC_REQUEST_ID = "request-id"

_ERROR = {
    "type": "object",
    "required": ["type", "error"],
    "properties": {
        "type": {"const": "error"},
        "error": {
            "type": "object",
            "required": ["type", "message"],
            "properties": {"type": {"type": "string"}, "message": {"type": "string"}},
        },
    },
}
# The route's own errors are Anthropic's; what the edge refuses first (body too large, a retired
# API-Version) is in the gateway envelope.
_ERRORS = {"anyOf": [_ERROR, {"$ref": "#/components/schemas/GatewayError"}]}


_REQUEST_ID = {
    "description": "The id of this request, as Anthropic names it (the same as X-Request-Id).",
    "schema": {"type": "string"},
}
# The client's head an Anthropic-compatible upstream gets (anthropic_body.passed_headers).
_PASSED = [
    {
        "name": "anthropic-version",
        "in": "header",
        "required": False,
        "description": "The Messages API version; an Anthropic-compatible upstream gets it (else 2023-06-01).",
        "schema": {"type": "string", "pattern": f"^{VERSION_PATTERN}$"},
    },
    {
        "name": "anthropic-beta",
        "in": "header",
        "required": False,
        "description": "Comma-separated beta names, passed to an Anthropic-compatible upstream.",
        "schema": {"type": "string", "maxLength": MAX_HEADER, "pattern": f"^{BETA_PATTERN}$"},
    },
]


def _openapi(body: Any, ok: dict[str, Any], head: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    named = {ANTHROPIC_REQUEST_ID: _REQUEST_ID}
    responses: dict[str, Any] = {"200": {"description": "The answer", "content": ok, "headers": named}}
    for status in ("400", "401", "402", "403", "404", "429", "500", "502", "503", "504"):
        error = {JSON: {"schema": _ERRORS}}
        responses[status] = {"description": "An error", "content": error, "headers": named}
    schema = _inline_refs(body.json_schema())
    request = {
        "requestBody": {"required": True, "content": {JSON: {"schema": schema}}},
        "responses": responses,
    }
    return {**request, "parameters": head} if head else request


_MESSAGE = {JSON: {"schema": {"type": "object"}}, SSE: EVENT_STREAM}
_COUNT = {
    JSON: {
        "schema": {
            "type": "object",
            "required": ["input_tokens"],
            "properties": {"input_tokens": {"type": "integer"}},
        }
    }
}


async def _anthropic_shaped(request: Request, handle: Callable[[Request], Awaitable[Response]]) -> Response:
    try:
        response = await handle(request)
    except AgentError as err:
        response = error_response(request, err)
    except Exception:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        response = error_response(request, AgentError("Internal error; please retry later."))
    # Anthropic names the request in ``request-id`` (its SDK's ``_request_id`` and error
    # ``request_id``); the edge's ``X-Request-Id`` carries the same id.
    if (request_id := current_request_id()) is not None:
        response.headers[ANTHROPIC_REQUEST_ID] = request_id
    return response


def error_response(request: Request, err: AgentError) -> Response:
    headers = err.headers
    if err.http_status == 401:  # as every 401: the challenge points to the protected-resource metadata
        base_url = request.app.state.services.settings.public_base_url.rstrip("/")
        headers = with_bearer_challenge(headers, base_url)
    return Response(to_json(anthropic_error(err)), err.http_status, headers, media_type=JSON)


@router.post(
    "/v1/messages",
    summary="Create a message (the Anthropic Messages API; JSON, or its events with stream: true)",
    openapi_extra=_openapi(MESSAGES_BODY, _MESSAGE, _PASSED),
)
async def create_message(request: Request) -> Response:
    return await _anthropic_shaped(request, lambda r: serve(r, SURFACE))


async def _count(request: Request) -> Response:
    gateway: Gateway = request.app.state.gateway
    key = api_key_of(request)
    caller = await gateway.admit(key, "chat")
    exchange = Exchange(gateway, caller, key, COUNT_USAGE, pinned_version(request))
    exchange.backend = "gateway"
    try:
        body = read_count_body(await request.body())
        exchange.model = body["model"]
        gateway.entitle(caller, exchange.model)
        tokens = prompt_tokens(body)
    except ValidationError as exc:
        raise await exchange.refuse(validation_error(list(exc.errors(include_url=False)))) from None
    except AgentError as err:
        raise await exchange.refuse(err) from None
    await exchange.record(200)
    return Response(to_json({"input_tokens": tokens}), media_type=JSON, headers=caller.headers)


@router.post(
    "/v1/messages/count_tokens",
    summary="Count a message's input tokens (the gateway's estimate; no model is called)",
    openapi_extra=_openapi(COUNT_BODY, _COUNT),
)
async def count_tokens(request: Request) -> Response:
    return await _anthropic_shaped(request, _count)
