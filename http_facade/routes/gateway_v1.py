"""The OpenAI-compatible tenant gateway: POST /v1/chat/completions, GET /v1/models[/{id}].

Chat completions are relayed (``gateway_relay.py``): every field of the request goes upstream as
sent, the answer comes back as the upstream sent it, with our model id. The other relayed
endpoints have a module each (``gateway_completions.py``, ``gateway_embeddings.py``,
``gateway_responses.py``).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import APIRouter, FastAPI, Request, Response

from agent_server.foundation.errors import NotFound
from agent_server.gateway.service import Gateway
from agent_server.llm.types import CHAT
from http_facade.gateway_deps import ModelsCaller
from http_facade.routes.gateway_relay import (
    JSON,
    DirectRoute,
    Endpoint,
    pinned_version,
    relay_request,
    request_body,
)

router = APIRouter(tags=["gateway"])
CHAT_COMPLETIONS = Endpoint(CHAT, "chat", "chat")


async def chat_completions(request: Request) -> Response:
    return await relay_request(request, CHAT_COMPLETIONS)


def add_chat_route(app: FastAPI, endpoint: Callable[..., Awaitable[Response]] | None = None) -> None:
    """``POST /v1/chat/completions`` on the app itself, ahead of every other route.

    A route of an included router is matched twice per request (FastAPI asks the router whether it
    matches, then matches again inside it); the busiest route is matched once, and first.
    """
    app.router.add_api_route(
        "/v1/chat/completions",
        endpoint or chat_completions,  # the response cache brings its own (gateway_cached.py)
        methods=["POST"],
        tags=["gateway"],
        summary="Create a chat completion (JSON, or server-sent events with stream: true)",
        openapi_extra=request_body(CHAT, streamed=True),
        route_class_override=DirectRoute,
    )
    app.router.routes.insert(0, app.router.routes.pop())


@router.get("/v1/models", summary="The models this key may call (OpenAI list shape)")
async def list_models(request: Request, caller: ModelsCaller) -> Response:
    gateway: Gateway = request.app.state.gateway
    await gateway.record(caller, "models", "", 200, "gateway", api_version=pinned_version(request))
    body = {"object": "list", "data": await gateway.callable_models(caller)}
    return _json(body, caller.headers)


@router.get("/v1/models/{model_id:path}", summary="One model this key may call")
async def retrieve_model(request: Request, model_id: str, caller: ModelsCaller) -> Response:
    gateway: Gateway = request.app.state.gateway
    version = pinned_version(request)
    model = await gateway.callable_model(caller, model_id)
    if model is None:
        await gateway.record(
            caller, "models", model_id, 404, "gateway", api_version=version, error_code="model_not_found"
        )
        raise NotFound(
            f"The model '{model_id}' does not exist or this key may not call it.",
            code="model_not_found",
            param="model",
            headers=caller.headers,
        )
    await gateway.record(caller, "models", model_id, 200, "gateway", api_version=version)
    return _json(model, caller.headers)


def _json(body: dict[str, Any], headers: dict[str, str]) -> Response:
    return Response(json.dumps(body, separators=(",", ":")).encode(), media_type=JSON, headers=headers)
