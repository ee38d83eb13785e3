"""Webhooks: register one (its signing secret shown once), its page with the recent deliveries and
their attempts, and send a delivery again; the usage alerts form sits on the list page. Changing,
testing, disabling or deleting a webhook is ``webhook_manage.py``. The pages call the functions of
``/admin/webhooks`` (the same checks: the plan's ``webhooks`` feature, the URL guard, another
tenant's id answering 404). On a plan without webhooks the forms are shown disabled with the plan
that has them (``plan_gate``).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Form, Request
from fastapi.responses import HTMLResponse, Response

from agent_server.admin.wiring import admin_services
from agent_server.foundation.errors import AgentError
from http_facade.pages.dashboard.audit_trail import audited
from http_facade.pages.dashboard.json_body import json_body
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
from http_facade.pages.dashboard.session import current_session
from http_facade.pages.dashboard.webhook_views import (
    NOTICES,
    WEBHOOKS_PAGE,
    Id,
    Notice,
    WebhookForm,
    list_page,
    webhook_page,
)
from http_facade.pages.form_state import FormState, redisplays, sent_form
from http_facade.routes import admin_webhooks as json_routes

router = dashboard_router()


@router.get(WEBHOOKS_PAGE, summary="Dashboard: the organisation's webhooks and usage alerts")
async def webhooks_page(
    request: Request, session: SessionDep, deleted: Notice = "", done: Notice = ""
) -> HTMLResponse:
    notice = f"The webhook {deleted} is deleted; its pending deliveries stopped." if deleted else ""
    return await list_page(request, session, notice=notice or NOTICES.get(done, ""))


async def _create_again(request: Request, form: FormState) -> HTMLResponse:
    return await list_page(request, await current_session(request), form=form)


@router.post(
    WEBHOOKS_PAGE,
    summary="Dashboard: register a webhook (its signing secret is shown once, on this answer only)",
    responses=responses(),
)
@redisplays(_create_again)
async def create_webhook(
    request: Request, form: Annotated[WebhookForm, Form()], session: SessionDep
) -> HTMLResponse:
    checked(request, form)
    admin = admin_services(request.app.state.services)
    try:
        body = json_body(
            json_routes.WebhookCreate, url=form.url, events=form.events, description=form.description
        )
        async with audited(request, session.user_id, session.tenant_id, "webhook.create") as note:
            created = await json_routes.create_webhook(body, actor_of(request, session), admin, request)
            note["target"], note["details"]["events"] = created["id"], created["events"]
    except AgentError as err:
        return await list_page(request, session, form=FormState.sent(await sent_form(request), err))
    return page(request, "webhook_created.html", {"webhook": created}, session=session)


@router.get(
    f"{WEBHOOKS_PAGE}/{{webhook_id}}",
    summary="Dashboard: a webhook, its settings and its recent deliveries with every attempt",
    responses=responses(404),
)
async def deliveries_page(
    request: Request, webhook_id: Id, session: SessionDep, redelivered: Notice = "", done: Notice = ""
) -> HTMLResponse:
    notice = f"The event of {redelivered} is queued again." if redelivered else NOTICES.get(done, "")
    return await webhook_page(request, session, webhook_id, notice=notice)


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
