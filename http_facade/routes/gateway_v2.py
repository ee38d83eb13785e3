"""The /v2 surface: POST /v2/chat/completions, GET /v2/models and GET /v2/models/{model_id}.

The successor of /v1's chat surface (what differs: ``agent_server/gateway/v2.py`` and
docs/gateway.md "/v2"): ``model`` among the key's callable models, the usage chunk in every
stream, a ``request_id`` in every error. The key is read as on /v1 (``Authorization: Bearer`` or
``X-API-Key``, spec 5.1). Chat goes through the same seams as /v1 (admission, entitlement, relay,
the response cache when it is on) and is metered as ``v2.chat``; the model list as ``v2.models``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import APIRouter, Request, Response
from pydantic_core import to_json

from agent_server.foundation.errors import AgentError, NotFound
from agent_server.foundation.request_context import HEADER, current_request_id, new_request_id
from agent_server.gateway.bodies import read_call
from agent_server.gateway.service import Caller, Gateway
from agent_server.gateway.v2 import CHAT_USAGE, MODELS_USAGE, callable_call, stream_style, with_request_id
from agent_server.llm.types import CHAT, Call
from http_facade.gateway_deps import api_key_of
from http_facade.routes.gateway_relay import JSON, DirectRoute, Endpoint, pinned_version, request_body
from http_facade.routes.gateway_surface import Surface, serve

router = APIRouter(tags=["gateway"])


def request_id() -> tuple[str, dict[str, str]]:
    """This request's id (the edge's, which it sends as X-Request-Id), and the header to add when
    the request came without one (an app served without the edge)."""
    known = current_request_id()
    if known:
        return known, {}
    made = new_request_id()
    return made, {HEADER: made}


def _read_chat(raw: bytes, created: int) -> Call:
    return read_call(CHAT, raw, created)


# The key as on /v1 (spec 5.1): Authorization: Bearer or X-API-Key.
CHAT_SURFACE = Surface(Endpoint(CHAT, "chat", CHAT_USAGE), _read_chat, api_key_of, callable_call)


async def _named(handle: Callable[[str, dict[str, str]], Awaitable[Response]]) -> Response:
    """The answer of ``handle``, or its error with the request id (rendered in the gateway envelope)."""
    rid, header = request_id()
    try:
        return await handle(rid, header)
    except AgentError as err:
        err.headers.update(header)
        raise with_request_id(err, rid) from None


async def chat_completions(request: Request) -> Response:
    async def handle(rid: str, header: dict[str, str]) -> Response:
        cache = request.app.state.response_cache
        return await serve(request, CHAT_SURFACE, cache=cache, style=stream_style(rid), headers=header)

    return await _named(handle)


router.add_api_route(
    "/v2/chat/completions",
    chat_completions,
    methods=["POST"],
    summary="Create a chat completion (/v2: JSON, or server-sent events that always end with the usage)",
    openapi_extra=request_body(CHAT, streamed=True),
    route_class_override=DirectRoute,
)


async def _models_caller(request: Request) -> tuple[Gateway, Caller]:
    gateway: Gateway = request.app.state.gateway
    return gateway, await gateway.admit(api_key_of(request), "models")


def _json(body: dict[str, Any], headers: dict[str, str]) -> Response:
    return Response(to_json(body), media_type=JSON, headers=headers)


@router.get("/v2/models", summary="The models this key may call (/v2)")
async def list_models(request: Request) -> Response:
    async def handle(rid: str, header: dict[str, str]) -> Response:
        gateway, caller = await _models_caller(request)
        version = pinned_version(request)
        await gateway.record(caller, MODELS_USAGE, "", 200, "gateway", api_version=version)
        body = {"object": "list", "data": await gateway.callable_models(caller)}
        return _json(body, {**caller.headers, **header})

    return await _named(handle)


@router.get("/v2/models/{model_id:path}", summary="One model this key may call (/v2)")
async def retrieve_model(request: Request, model_id: str) -> Response:
    async def handle(rid: str, header: dict[str, str]) -> Response:
        gateway, caller = await _models_caller(request)
        version = pinned_version(request)
        model = await gateway.callable_model(caller, model_id)
        status = 200 if model is not None else 404
        code = None if model is not None else "model_not_found"
        await gateway.record(
            caller, MODELS_USAGE, model_id, status, "gateway", api_version=version, error_code=code
        )
        if model is None:
            raise NotFound(
                f"The model '{model_id}' does not exist or this key may not call it.",
                code="model_not_found",
                param="model",
                headers=caller.headers,
            )
        return _json(model, {**caller.headers, **header})

    return await _named(handle)
