"""The Responses API: POST /v1/responses (relayed like chat completions, metered as "responses"),
and the stored responses of the key's organisation: GET and DELETE /v1/responses/{response_id},
GET /v1/responses/{response_id}/input_items.

A response is stored unless the request says ``store: false`` and can be chained with
``previous_response_id`` (``agent_server/gateway/responses.py``); a stored response reads as gone
after ``AGENTGATE_RESPONSES_RETENTION_DAYS``. Every route needs the ``chat`` scope, as creating does.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request, Response
from fastapi.routing import APIRoute
from pydantic_core import to_json

from agent_server.foundation.errors import NotFound
from agent_server.gateway.bodies import read_call
from agent_server.gateway.chat import RESPONSES_STREAM
from agent_server.gateway.response_store import ResponseStore, Stored
from agent_server.gateway.responses import StoredResponses, items_page
from agent_server.gateway.service import Caller, Gateway
from agent_server.llm.types import RESPONSES, Call
from http_facade.gateway_deps import ChatCaller
from http_facade.routes.gateway_relay import JSON, DirectRoute, Endpoint, pinned_version, request_body
from http_facade.routes.gateway_surface import Surface, serve

router = APIRouter(tags=["gateway"], route_class=DirectRoute)
ENDPOINT = Endpoint(RESPONSES, "chat", "responses", style=RESPONSES_STREAM)
# Usage rows of the stored-response routes (no tokens): their endpoint names.
RETRIEVE, DELETE, INPUT_ITEMS = "responses.retrieve", "responses.delete", "responses.input_items"
_OBJECT = {"type": "object"}
_MISSING = {"description": "No stored response of this organisation has that id (or it expired)."}


def _read(raw: bytes, created: int) -> Call:
    return read_call(RESPONSES, raw, created)


@router.post(
    "/v1/responses",
    summary="Create a response (the Responses API; JSON, or its typed events with stream: true)",
    openapi_extra=request_body(RESPONSES, streamed=True),
)
async def create(request: Request) -> Response:
    gateway: Gateway = request.app.state.gateway
    state = StoredResponses(ResponseStore.of(gateway.services))  # this request's chain and store

    async def chain(_: Gateway, caller: Caller, call: Call) -> Call:
        return await state.chain(caller, call)

    return await serve(request, Surface(ENDPOINT, _read, check=chain, after=state.keep))


async def _stored(request: Request, caller: Caller, response_id: str, usage: str) -> Stored:
    """The caller's organisation's stored response, or 404; recorded as a usage row either way."""
    gateway: Gateway = request.app.state.gateway
    stored = await ResponseStore.of(gateway.services).get(caller.principal.tenant_id, response_id)
    await _record(request, caller, usage, stored.model if stored else "", 200 if stored else 404)
    if stored is None:
        raise _not_found(response_id, caller)
    return stored


async def _record(request: Request, caller: Caller, usage: str, model: str, status: int) -> None:
    gateway: Gateway = request.app.state.gateway
    await gateway.record(caller, usage, model, status, "gateway", api_version=pinned_version(request))


def _not_found(response_id: str, caller: Caller) -> NotFound:
    return NotFound(
        f"No stored response has the id '{response_id}' (or it expired); responses created with "
        "store not false are kept for the retention the gateway documents.",
        code="response_not_found",
        param="response_id",
        headers=caller.headers,
    )


def _json(body: bytes, caller: Caller) -> Response:
    return Response(body, media_type=JSON, headers=caller.headers)


async def retrieve(request: Request, response_id: str, caller: ChatCaller) -> Response:
    stored = await _stored(request, caller, response_id, RETRIEVE)
    return _json(to_json(stored.response), caller)


async def delete(request: Request, response_id: str, caller: ChatCaller) -> Response:
    gateway: Gateway = request.app.state.gateway
    deleted = await ResponseStore.of(gateway.services).delete(caller.principal.tenant_id, response_id)
    await _record(request, caller, DELETE, "", 200 if deleted else 404)
    if not deleted:
        raise _not_found(response_id, caller)
    return _json(to_json({"id": response_id, "object": "response", "deleted": True}), caller)


async def input_items(
    request: Request,
    response_id: str,
    caller: ChatCaller,
    limit: Annotated[int, Query(ge=1, le=100, description="Items per page.")] = 20,
    order: Annotated[
        Literal["asc", "desc"], Query(description="desc: newest first (OpenAI's default).")
    ] = "desc",
    after: Annotated[
        str | None, Query(max_length=256, description="The id of the item to list after.")
    ] = None,
) -> Response:
    stored = await _stored(request, caller, response_id, INPUT_ITEMS)
    return _json(to_json(items_page(stored.input_items, limit, order, after)), caller)


def _declared(ok: str, schema: dict[str, Any]) -> dict[int | str, dict[str, Any]]:
    return {200: {"description": ok, "content": {JSON: {"schema": schema}}}, 404: _MISSING}


_DELETED = {
    "type": "object",
    "required": ["id", "object", "deleted"],
    "properties": {"id": {"type": "string"}, "object": {"const": "response"}, "deleted": {"const": True}},
}
_LIST = {
    "type": "object",
    "required": ["object", "data", "has_more"],
    "properties": {
        "object": {"const": "list"},
        "data": {"type": "array", "items": _OBJECT},
        "first_id": {"type": ["string", "null"]},
        "last_id": {"type": ["string", "null"]},
        "has_more": {"type": "boolean"},
    },
}
for path, method, endpoint, summary, declared in (
    ("/v1/responses/{response_id}", "GET", retrieve, "A stored response", _declared("The response", _OBJECT)),
    (
        "/v1/responses/{response_id}",
        "DELETE",
        delete,
        "Delete a stored response",
        _declared("Deleted", _DELETED),
    ),
    (
        "/v1/responses/{response_id}/input_items",
        "GET",
        input_items,
        "The input items of a stored response (the conversation it answered)",
        _declared("A page of items", _LIST),
    ),
):
    router.add_api_route(
        path,
        endpoint,
        methods=[method],
        summary=summary,
        responses=declared,
        route_class_override=APIRoute,
    )
