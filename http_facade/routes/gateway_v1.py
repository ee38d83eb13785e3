"""The OpenAI-compatible tenant gateway: POST /v1/chat/completions, GET /v1/models[/{id}].

Order per request (spec 5.1): API key, rate limit, scope (``Gateway.admit``), then body, plan
entitlements (model, streaming) and the backend. Every response after admission, errors included,
carries the X-RateLimit-* headers. The body is parsed here rather than by FastAPI, so a bad key is
401 even when the body is bad too, and a bad body is a 400 in the gateway envelope, never a 422.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, FastAPI, Request, Response
from fastapi.routing import APIRoute
from pydantic import ValidationError
from starlette.routing import request_response

from agent_server.errors import AgentError, NotFound
from agent_server.gateway.chat import ChunkEncoder, completion_body, completion_id, sse_stream
from agent_server.gateway.service import Caller, Gateway
from agent_server.llm.types import ChatRequest, LLMBackend, Usage
from http_facade.errors import validation_error
from http_facade.gateway_deps import ModelsCaller, api_key_of
from http_facade.middleware import MODEL_KEY
from http_facade.streaming import EventStreamResponse

router = APIRouter(tags=["gateway"])
JSON = "application/json"
# no-cache: nothing between us and the client may store it; X-Accel-Buffering: nginx must not buffer.
SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
PINNED_VERSION_KEY = "api_version"  # the edge (http_facade/middleware.py) leaves a pinned version here


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


_CHAT_BODY = {
    "requestBody": {
        "required": True,
        "content": {JSON: {"schema": _inline_refs(ChatRequest.model_json_schema())}},
    }
}


def parse_chat(body: bytes) -> ChatRequest:
    try:
        return ChatRequest.model_validate_json(body)
    except ValidationError as exc:
        raise validation_error(list(exc.errors(include_url=False))) from None


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


async def chat_completions(request: Request) -> Response:
    gateway: Gateway = request.app.state.gateway
    caller = await gateway.admit(api_key_of(request), "chat")
    version = pinned_version(request)
    model, backend = "", ""
    try:
        chat = parse_chat(await request.body())
        model = chat.model
        request.scope.setdefault("state", {})[MODEL_KEY] = model  # the metrics series of this request
        gateway.entitle(caller, model, stream=chat.stream)
        llm = gateway.llm_for(caller.principal)
        backend = llm.name
        if chat.stream:
            return await _stream(gateway, caller, llm, chat, version)
        completion = await llm.complete(chat)
    except AgentError as err:
        err.headers.update(caller.headers)
        await gateway.record(caller, "chat", model, err.http_status, backend, api_version=version)
        raise
    except Exception:
        await gateway.record(caller, "chat", model, 500, backend, api_version=version)
        raise
    usage = completion.usage
    await gateway.record(
        caller,
        "chat",
        model,
        200,
        backend,
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens,
        api_version=version,
    )
    body = completion_body(completion_id(), int(gateway.clock.now()), completion)
    return Response(body, media_type=JSON, headers=caller.headers)


def add_chat_route(app: FastAPI) -> None:
    """``POST /v1/chat/completions`` on the app itself, ahead of every other route.

    A route of an included router is matched twice per request (FastAPI asks the router whether it
    matches, then matches again inside it); the busiest route is matched once, and first.
    """
    app.router.add_api_route(
        "/v1/chat/completions",
        chat_completions,
        methods=["POST"],
        tags=["gateway"],
        summary="Create a chat completion (JSON, or server-sent events with stream: true)",
        openapi_extra=_CHAT_BODY,
        route_class_override=DirectRoute,
    )
    app.router.routes.insert(0, app.router.routes.pop())


async def _stream(
    gateway: Gateway, caller: Caller, llm: LLMBackend, chat: ChatRequest, version: str | None
) -> Response:
    deltas = llm.stream(chat)
    # The first delta is awaited before any byte is sent: a failure up to here (unknown model at
    # the router, upstream down, timeout) still gets its real HTTP status instead of a 200 stream.
    first = await anext(deltas, None)
    backend = llm.name

    async def done(status: int, usage: Usage) -> None:
        await gateway.record(
            caller,
            "chat",
            chat.model,
            status,
            backend,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            stream=True,
            api_version=version,
        )

    encoder = ChunkEncoder(completion_id(), int(gateway.clock.now()), chat.model)
    return EventStreamResponse(
        sse_stream(chat, encoder, first, deltas, done), headers={**caller.headers, **SSE_HEADERS}
    )


@router.get("/v1/models", summary="The models this key's plan may use (OpenAI list shape)")
async def list_models(request: Request, caller: ModelsCaller) -> Response:
    gateway: Gateway = request.app.state.gateway
    await gateway.record(caller, "models", "", 200, "gateway", api_version=pinned_version(request))
    body = {"object": "list", "data": gateway.catalog.model_list(caller.principal.plan)}
    return _json(body, caller.headers)


@router.get("/v1/models/{model_id:path}", summary="One model of this key's plan")
async def retrieve_model(request: Request, model_id: str, caller: ModelsCaller) -> Response:
    gateway: Gateway = request.app.state.gateway
    version = pinned_version(request)
    if model_id not in caller.principal.plan.model_set:
        await gateway.record(caller, "models", model_id, 404, "gateway", api_version=version)
        raise NotFound(
            f"The model '{model_id}' does not exist or is not on your plan.",
            code="model_not_found",
            param="model",
            headers=caller.headers,
        )
    await gateway.record(caller, "models", model_id, 200, "gateway", api_version=version)
    return _json(gateway.catalog.model_object(model_id), caller.headers)


def _json(body: dict[str, Any], headers: dict[str, str]) -> Response:
    return Response(json.dumps(body, separators=(",", ":")).encode(), media_type=JSON, headers=headers)
