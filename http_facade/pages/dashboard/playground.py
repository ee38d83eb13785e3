"""The playground: a chat as the organisation, through the router, with its trace.

The form calls the function of ``POST /admin/playground/chat`` (plan check, traced chat, usage
row); the answer page streams the trace's steps from ``/app/playground/trace/{id}/stream``, the
session-authenticated twin of ``/admin/playground/trace/{id}/stream`` (the same events), and links
to the trace as a page for browsers without scripts.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Form, Path, Request
from fastapi.responses import HTMLResponse
from pydantic import Field
from sse_starlette import EventSourceResponse

from agent_server.admin.wiring import admin_services
from agent_server.errors import AgentError
from agent_server.llm.types import ChatMessage
from http_facade.pages.dashboard.audit_trail import audited
from http_facade.pages.dashboard.route import (
    DashboardForm,
    SessionDep,
    actor_of,
    checked,
    dashboard_router,
    page,
    responses,
)
from http_facade.pages.dashboard.session import APP_PATH, Session
from http_facade.pages.dashboard.tenant import tenant_of
from http_facade.routes import admin_playground as json_routes
from wellknown.event_stream import streamed_answer

router = dashboard_router()
PLAYGROUND_PAGE = f"{APP_PATH}/playground"
TraceId = Annotated[str, Path(min_length=1, max_length=40, pattern=r"^[A-Za-z0-9_-]+$")]


class PlaygroundForm(DashboardForm):
    model: str = Field(min_length=1, max_length=200)
    system: str = Field(default="", max_length=4000)
    message: str = Field(min_length=1, max_length=8000)
    max_tokens: int | None = Field(default=None, ge=1, le=4096)


async def _page(
    request: Request,
    session: Session,
    *,
    form: PlaygroundForm | None = None,
    result: dict[str, Any] | None = None,
    error: AgentError | None = None,
) -> HTMLResponse:
    _, plan = await tenant_of(request, session)
    models = [m for m in request.app.state.services.knowledge.pack.models if plan.grant.allows(m.id)]
    admin = admin_services(request.app.state.services)
    traces = await json_routes.list_traces(actor_of(request, session), admin, limit=10)
    context = {
        "models": models,
        "form": form,
        "result": result,
        "error": error,
        "error_trace": error.extra.get("trace_id") if error else None,
        "traces": traces["data"],
    }
    return page(
        request, "playground.html", context, session=session, status=error.http_status if error else 200
    )


@router.get(PLAYGROUND_PAGE, summary="Dashboard: the playground (chat as the organisation, traced)")
async def playground_page(request: Request, session: SessionDep) -> HTMLResponse:
    return await _page(request, session)


@router.post(
    PLAYGROUND_PAGE,
    summary="Dashboard: run a playground chat; the answer and its trace",
    responses=responses(),
)
async def playground_chat(
    request: Request, form: Annotated[PlaygroundForm, Form()], session: SessionDep
) -> HTMLResponse:
    checked(request, form)
    system = [ChatMessage(role="system", content=form.system)] if form.system.strip() else []
    body = json_routes.PlaygroundChat(
        model=form.model,
        messages=[*system, ChatMessage(role="user", content=form.message)],
        max_tokens=form.max_tokens,
    )
    admin = admin_services(request.app.state.services)
    details = {"model": form.model}
    try:
        async with audited(
            request, session.user_id, session.tenant_id, "playground.chat", details=details
        ) as note:
            result = await json_routes.playground_chat(body, actor_of(request, session), admin, request)
            note["target"] = result["trace_id"]
    except AgentError as err:
        return await _page(request, session, form=form, error=err)
    return await _page(request, session, form=form, result=result)


@router.get(
    f"{PLAYGROUND_PAGE}/trace/{{trace_id}}",
    summary="Dashboard: a playground trace with its steps",
    responses=responses(404),
)
async def trace_page(request: Request, trace_id: TraceId, session: SessionDep) -> HTMLResponse:
    admin = admin_services(request.app.state.services)
    trace = await json_routes.get_trace(trace_id, actor_of(request, session), admin)
    return page(request, "trace.html", {"trace": trace}, session=session)


@router.get(
    f"{PLAYGROUND_PAGE}/trace/{{trace_id}}/stream",
    summary="Dashboard: a trace's steps as server-sent events (step…, end)",
    response_class=EventSourceResponse,
    responses=responses(404),
    openapi_extra={"responses": streamed_answer(json_routes.TRACE_EVENTS)},
)
async def trace_stream(request: Request, trace_id: TraceId, session: SessionDep) -> EventSourceResponse:
    admin = admin_services(request.app.state.services)
    return await json_routes.stream_trace(trace_id, actor_of(request, session), admin)
