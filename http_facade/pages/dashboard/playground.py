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
from agent_server.foundation.errors import AgentError
from agent_server.gateway.plans import PlanInfo
from agent_server.knowledge.pack import Model
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
from http_facade.pages.dashboard.session import APP_PATH, Session, current_session
from http_facade.pages.dashboard.tenant import tenant_of
from http_facade.pages.dashboard.trace_text import describe_step
from http_facade.pages.form_state import FormState, redisplays, sent_form
from http_facade.routes import admin_playground as json_routes
from wellknown.event_stream import streamed_answer

router = dashboard_router()
PLAYGROUND_PAGE = f"{APP_PATH}/playground"
CHAT = "chat"
TraceId = Annotated[str, Path(min_length=1, max_length=40, pattern=r"^[A-Za-z0-9_-]+$")]


class PlaygroundForm(DashboardForm):
    model: str = Field(min_length=1, max_length=200)
    system: str = Field(default="", max_length=4000)
    message: str = Field(min_length=1, max_length=8000)
    max_tokens: int | None = Field(default=None, ge=1, le=4096)


def chat_models(request: Request, plan: PlanInfo) -> list[Model]:
    """The models the playground offers: the plan's models that chat (it sends a chat, not embeddings)."""
    models = request.app.state.services.knowledge.pack.models
    return [m for m in models if CHAT in m.capabilities and plan.grant.allows(m.id)]


async def _page(
    request: Request,
    session: Session,
    *,
    form: FormState | None = None,
    result: dict[str, Any] | None = None,
) -> HTMLResponse:
    _, plan = await tenant_of(request, session)
    admin = admin_services(request.app.state.services)
    traces = await json_routes.list_traces(actor_of(request, session), admin, limit=10)
    form = (form or FormState.blank()).at("playground")
    problem = form.problem
    context = {
        "models": chat_models(request, plan),
        "form": form,
        "result": result,
        "error_trace": problem.extra.get("trace_id") if problem else None,
        "traces": traces["data"],
        "describe_step": describe_step,
    }
    return page(request, "playground.html", context, session=session, status=form.status)


async def _page_again(request: Request, form: FormState) -> HTMLResponse:
    return await _page(request, await current_session(request), form=form)


@router.get(PLAYGROUND_PAGE, summary="Dashboard: the playground (chat as the organisation, traced)")
async def playground_page(request: Request, session: SessionDep) -> HTMLResponse:
    return await _page(request, session)


@router.post(
    PLAYGROUND_PAGE,
    summary="Dashboard: run a playground chat; the answer and its trace",
    responses=responses(),
)
@redisplays(_page_again)
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
    except AgentError as err:  # any failure, an upstream's too: the page shows it with its trace
        return await _page(request, session, form=FormState.sent(await sent_form(request), err))
    return await _page(request, session, form=FormState.sent(await sent_form(request)), result=result)


@router.get(
    f"{PLAYGROUND_PAGE}/trace/{{trace_id}}",
    summary="Dashboard: a playground trace with its steps",
    responses=responses(404),
)
async def trace_page(request: Request, trace_id: TraceId, session: SessionDep) -> HTMLResponse:
    admin = admin_services(request.app.state.services)
    trace = await json_routes.get_trace(trace_id, actor_of(request, session), admin)
    return page(request, "trace.html", {"trace": trace, "describe_step": describe_step}, session=session)


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
