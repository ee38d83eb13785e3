"""Webhooks: register one (its signing secret shown once), see its recent deliveries with their
attempts, and send a delivery again. The pages call the functions of ``/admin/webhooks`` (the same
checks: the plan's ``webhooks`` feature, the URL guard, another tenant's id answering 404).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Form, Path, Request
from fastapi.responses import HTMLResponse, Response
from pydantic import Field

from agent_server.admin.wiring import admin_services
from agent_server.webhooks.repository import EVENT_TYPES
from http_facade.pages.dashboard.audit_trail import audited
from http_facade.pages.dashboard.route import (
    DashboardForm,
    SessionDep,
    actor_of,
    checked,
    dashboard_router,
    page,
    responses,
    see_other,
)
from http_facade.pages.dashboard.session import APP_PATH, Session, current_session
from http_facade.pages.form_state import FormState, redisplays
from http_facade.routes import admin_webhooks as json_routes

router = dashboard_router()
WEBHOOKS_PAGE = f"{APP_PATH}/webhooks"
Id = Annotated[str, Path(min_length=1, max_length=40, pattern=r"^[A-Za-z0-9_-]+$")]


class WebhookForm(DashboardForm):
    url: str = Field(min_length=8, max_length=2048)
    events: list[str] = Field(default_factory=list, max_length=len(EVENT_TYPES))
    description: str = Field(default="", max_length=200)


async def _list_page(request: Request, session: Session, *, form: FormState | None = None) -> HTMLResponse:
    admin = admin_services(request.app.state.services)
    listed = await json_routes.list_webhooks(actor_of(request, session), admin)
    form = (form or FormState.blank(events=listed["event_types"])).at("webhook")
    context = {"webhooks": listed["data"], "event_types": listed["event_types"], "form": form}
    return page(request, "webhooks.html", context, session=session, status=form.status)


async def _list_again(request: Request, form: FormState) -> HTMLResponse:
    return await _list_page(request, await current_session(request), form=form)


@router.get(WEBHOOKS_PAGE, summary="Dashboard: the organisation's webhooks")
async def webhooks_page(request: Request, session: SessionDep) -> HTMLResponse:
    return await _list_page(request, session)


@router.post(
    WEBHOOKS_PAGE,
    summary="Dashboard: register a webhook (its signing secret is shown once, on this answer only)",
    responses=responses(),
)
@redisplays(_list_again)
async def create_webhook(
    request: Request, form: Annotated[WebhookForm, Form()], session: SessionDep
) -> HTMLResponse:
    checked(request, form)
    admin = admin_services(request.app.state.services)
    body = json_routes.WebhookCreate(url=form.url, events=form.events, description=form.description)
    async with audited(request, session.user_id, session.tenant_id, "webhook.create") as note:
        created = await json_routes.create_webhook(body, actor_of(request, session), admin, request)
        note["target"], note["details"]["events"] = created["id"], created["events"]
    return page(request, "webhook_created.html", {"webhook": created}, session=session)


async def _deliveries_page(
    request: Request, session: Session, webhook_id: str, notice: str = ""
) -> HTMLResponse:
    admin, actor = admin_services(request.app.state.services), actor_of(request, session)
    hook = await json_routes.get_webhook(webhook_id, actor, admin)
    deliveries = await json_routes.list_deliveries(webhook_id, actor, admin, limit=50)
    context = {"webhook": hook, "deliveries": deliveries["data"], "notice": notice}
    return page(request, "webhook_deliveries.html", context, session=session)


@router.get(
    f"{WEBHOOKS_PAGE}/{{webhook_id}}",
    summary="Dashboard: a webhook and its recent deliveries with every attempt",
    responses=responses(404),
)
async def deliveries_page(
    request: Request, webhook_id: Id, session: SessionDep, redelivered: str = ""
) -> HTMLResponse:
    notice = f"The event of {redelivered} is queued again." if redelivered else ""
    return await _deliveries_page(request, session, webhook_id, notice[:120])


@router.post(
    f"{WEBHOOKS_PAGE}/{{webhook_id}}/deliveries/{{delivery_id}}/redeliver",
    summary="Dashboard: send a delivery's event again (same payload and event id)",
    responses=responses(404, 409),
)
async def redeliver(
    request: Request,
    webhook_id: Id,
    delivery_id: Id,
    form: Annotated[DashboardForm, Form()],
    session: SessionDep,
) -> Response:
    checked(request, form)
    admin = admin_services(request.app.state.services)
    details: dict[str, Any] = {"of": delivery_id}
    async with audited(
        request, session.user_id, session.tenant_id, "webhook.redeliver", target=webhook_id, details=details
    ):
        await json_routes.redeliver(webhook_id, delivery_id, actor_of(request, session), admin, request)
    return see_other(f"{WEBHOOKS_PAGE}/{webhook_id}?redelivered={delivery_id}")
