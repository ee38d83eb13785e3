"""The OpenAI Batch API on /v1/batches (docs/batches.md): the ``files`` scope plus the scope of the
batch's endpoint; a tenant sees only its own batches. The job workers run the lines."""

from __future__ import annotations

import json
from typing import Annotated

from fastapi import APIRouter, Query, Request, Response

from agent_server.batches.service import Batches, batch_view
from agent_server.foundation.errors import AgentError, ValidationFailed
from agent_server.gateway import keys
from http_facade.gateway_deps import api_key_of
from http_facade.routes.gateway_files import admitted

router = APIRouter(tags=["batches"])
CREATE_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {
                "schema": {
                    "type": "object",
                    "required": ["input_file_id", "endpoint", "completion_window"],
                    "properties": {
                        "input_file_id": {"type": "string"},
                        "endpoint": {
                            "type": "string",
                            "enum": [
                                "/v1/chat/completions",
                                "/v1/embeddings",
                                "/v1/completions",
                                "/v1/responses",
                            ],
                        },
                        "completion_window": {"type": "string", "enum": ["24h"]},
                        "metadata": {"type": "object", "additionalProperties": {"type": "string"}},
                    },
                }
            }
        },
    }
}


def batches_of(request: Request) -> Batches:
    return request.app.state.batches


@router.post("/v1/batches", summary="Create a batch of an uploaded JSONL file", openapi_extra=CREATE_BODY)
async def create_batch(request: Request) -> Response:
    call = await admitted(request, "batches")
    try:
        try:
            body = json.loads(await request.body())
        except ValueError:
            raise ValidationFailed("The body is not valid JSON.") from None
        parsed = keys.parse(api_key_of(request) or "")
        assert parsed is not None  # admitted: the key parsed
        batch = await batches_of(request).create(call.caller.principal, keys.digest(parsed[1]), body)
    except AgentError as err:
        raise await call.refuse(err) from None
    return await call.answer(batch_view(batch))


@router.get("/v1/batches", summary="This organisation's batches, newest first (cursor: after)")
async def list_batches(
    request: Request, after: str | None = None, limit: Annotated[int, Query(ge=1, le=100)] = 20
) -> Response:
    call = await admitted(request, "batches")
    try:
        rows, more = await batches_of(request).list(call.caller.principal.tenant_id, after, limit)
    except AgentError as err:
        raise await call.refuse(err) from None
    data = [batch_view(row) for row in rows]
    page = {
        "object": "list",
        "data": data,
        "first_id": data[0]["id"] if data else None,
        "last_id": data[-1]["id"] if data else None,
        "has_more": more,
    }
    return await call.answer(page)


@router.get("/v1/batches/{batch_id}", summary="One batch: status, request counts, output files")
async def retrieve_batch(request: Request, batch_id: str) -> Response:
    call = await admitted(request, "batches")
    try:
        batch = await batches_of(request).get(call.caller.principal.tenant_id, batch_id)
    except AgentError as err:
        raise await call.refuse(err) from None
    return await call.answer(batch_view(batch))


@router.post("/v1/batches/{batch_id}/cancel", summary="Cancel a batch: no new line starts")
async def cancel_batch(request: Request, batch_id: str) -> Response:
    call = await admitted(request, "batches")
    try:
        batch = await batches_of(request).cancel(call.caller.principal.tenant_id, batch_id)
    except AgentError as err:
        raise await call.refuse(err) from None
    return await call.answer(batch_view(batch))
