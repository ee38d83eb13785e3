"""The playground (a chat as the tenant, traced) and the realtime view of the tenant's traffic.

A playground chat goes through the router (``services.llm``) so its trace shows the routing
decision and every attempt, checks the model against the tenant's plan like ``/v1`` does, and
counts as usage of the tenant (key id ``playground``).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, ConfigDict, Field
from sse_starlette import EventSourceResponse

from agent_server.admin.realtime import counters
from agent_server.admin.traces import trace_view
from agent_server.foundation.errors import NotFound
from agent_server.foundation.request_context import current_request_id
from agent_server.gateway import repository as gateway_repo
from agent_server.gateway.usage import UsageRow
from agent_server.llm.types import ChatMessage, ChatRequest
from http_facade.routes.admin_common import ActorDep, AdminDep, audit_note
from wellknown.event_stream import streamed_answer

router = APIRouter(tags=["admin: playground"])
PLAYGROUND_KEY = "playground"
TRACE_EVENTS = "The trace's steps (event step, in order), then its summary (event end)."


class PlaygroundChat(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str = Field(min_length=1, max_length=200)
    messages: list[ChatMessage] = Field(min_length=1, max_length=50)
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_tokens: int | None = Field(default=None, ge=1, le=4096)


@router.post("/admin/playground/chat", summary="Run a chat as the tenant and record its trace")
async def playground_chat(
    body: PlaygroundChat, actor: ActorDep, admin: AdminDep, request: Request
) -> dict[str, Any]:
    services, gateway = request.app.state.services, request.app.state.gateway
    tenant = await gateway_repo.find_tenant(services.db, actor.tenant_id)
    if tenant is None:
        raise NotFound("The tenant of this token no longer exists.")
    gateway.catalog.check_model(gateway.catalog.get(tenant.plan_id), body.model)
    chat = ChatRequest(
        model=body.model, messages=body.messages, temperature=body.temperature, max_tokens=body.max_tokens
    )
    trace, completion, error = await admin.traces.run_chat(services.llm, chat, actor.tenant_id, actor.user_id)
    audit_note(request, action="playground.chat", target=trace.id, details={"model": body.model})
    gateway.usage.record(
        UsageRow(
            tenant_id=actor.tenant_id,
            key_id=PLAYGROUND_KEY,
            model=body.model,
            endpoint="playground",
            prompt_tokens=trace.prompt_tokens,
            completion_tokens=trace.completion_tokens,
            latency_ms=float(trace.latency_ms),
            status=200 if error is None else error.http_status,
            backend=trace.backend or "none",
            stream=False,
            created_at=services.clock.now(),
            request_id=current_request_id(),
            upstream=trace.backend,
            error_code=error.code if error is not None else None,
            trace_id=trace.id,
        )
    )
    if error is not None:
        error.extra["trace_id"] = trace.id
        raise error
    assert completion is not None
    return {
        "trace_id": trace.id,
        "trace": trace_view(trace, steps=False),
        "completion": {
            "id": f"chatcmpl-{trace.id}",
            "object": "chat.completion",
            "model": completion.model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": completion.content},
                    "finish_reason": completion.finish_reason,
                }
            ],
            "usage": trace_view(trace, steps=False)["usage"],
        },
    }


@router.get("/admin/playground/traces", summary="The tenant's playground traces, newest first")
async def list_traces(
    actor: ActorDep, admin: AdminDep, limit: int = Query(default=50, ge=1, le=100)
) -> dict[str, Any]:
    rows, total = await admin.traces.list(actor.tenant_id, limit)
    return {"object": "list", "total": total, "data": [trace_view(r, steps=False) for r in rows]}


@router.get("/admin/playground/trace/{traceId}", summary="One trace with its steps")
async def get_trace(traceId: str, actor: ActorDep, admin: AdminDep) -> dict[str, Any]:
    return trace_view(await admin.traces.get(actor.tenant_id, traceId))


@router.get(
    "/admin/playground/trace/{traceId}/stream",
    summary="A trace's steps as server-sent events",
    response_class=EventSourceResponse,
    openapi_extra={"responses": streamed_answer(TRACE_EVENTS)},
)
async def stream_trace(traceId: str, actor: ActorDep, admin: AdminDep) -> EventSourceResponse:
    record = await admin.traces.get(actor.tenant_id, traceId)  # 404 before the stream starts

    async def events() -> AsyncIterator[dict[str, str]]:
        for step in record.steps:
            yield {"event": "step", "id": str(step.get("seq", "")), "data": json.dumps(step)}
        summary = trace_view(record, steps=False)
        yield {"event": "end", "data": json.dumps(summary)}

    return EventSourceResponse(events(), headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})


@router.get("/admin/realtime/", summary="Live counters of the tenant: requests, errors, tokens per model")
async def realtime(
    actor: ActorDep, request: Request, window: int = Query(default=300, ge=10, le=86_400)
) -> dict[str, Any]:
    services, gateway = request.app.state.services, request.app.state.gateway
    await gateway.usage.flush()  # include what the usage writer still holds
    return {
        "tenant_id": actor.tenant_id,
        **await counters(services.db, actor.tenant_id, services.clock.now(), window),
    }


@router.get("/admin/realtime/trace/{traceId}", summary="A trace as the realtime view shows it")
async def realtime_trace(traceId: str, actor: ActorDep, admin: AdminDep) -> dict[str, Any]:
    view = trace_view(await admin.traces.get(actor.tenant_id, traceId))
    return {**view, "complete": True}
