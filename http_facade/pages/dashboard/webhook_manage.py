"""Changing a webhook from its page: edit the URL, events and description, disable and enable it,
send a test event (its delivery shown at once), rotate the signing secret (the new one shown once),
delete it after a confirmation; and save the usage alerts of the list page. Each form calls the
function of its ``/admin/webhooks`` (or ``/admin/usage/thresholds``) route with the session as the
acting admin and records the same audit action; a refusal re-renders the page with its message.
"""

from __future__ import annotations

from typing import Annotated, Literal

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
from http_facade.pages.dashboard.session import APP_PATH, current_session
from http_facade.pages.dashboard.thresholds import ThresholdsForm
from http_facade.pages.dashboard.webhook_views import (
    WEBHOOKS_PAGE,
    Id,
    WebhookForm,
    list_page,
    webhook_page,
)
from http_facade.pages.form_state import FormState, redisplays, sent_form
from http_facade.routes import admin_webhooks as json_routes

router = dashboard_router()
HOOK_PAGE = f"{WEBHOOKS_PAGE}/{{webhook_id}}"


class StateForm(DashboardForm):
    enabled: Literal["true", "false"]


async def _edit_again(request: Request, form: FormState) -> HTMLResponse:
    webhook_id = request.path_params["webhook_id"]
    return await webhook_page(request, await current_session(request), webhook_id, form=form)


@router.post(
    f"{HOOK_PAGE}/edit",
    summary="Dashboard: change a webhook's URL, events and description",
    responses=responses(404),
)
@redisplays(_edit_again)
async def edit_webhook(
    request: Request, webhook_id: Id, form: Annotated[WebhookForm, Form()], session: SessionDep
) -> Response:
    checked(request, form)
    admin, actor = admin_services(request.app.state.services), actor_of(request, session)
    details = {"fields": ["description", "events", "url"]}
    try:
        async with audited(
            request, session.user_id, session.tenant_id, "webhook.update", target=webhook_id, details=details
        ):
            fields = {"url": form.url, "events": form.events, "description": form.description}
            body = json_body(json_routes.WebhookUpdate, **fields)
            await json_routes.update_webhook(webhook_id, body, actor, admin, request)
    except AgentError as err:
        return await webhook_page(
            request, session, webhook_id, form=FormState.sent(await sent_form(request), err)
        )
    return see_other(f"{WEBHOOKS_PAGE}/{webhook_id}?done=saved")


@router.post(
    f"{HOOK_PAGE}/state",
    summary="Dashboard: disable a webhook (events are not delivered) or enable it again",
    responses=responses(404),
)
async def set_state(
    request: Request, webhook_id: Id, form: Annotated[StateForm, Form()], session: SessionDep
) -> Response:
    checked(request, form)
    admin, actor = admin_services(request.app.state.services), actor_of(request, session)
    enabled = form.enabled == "true"
    details = {"fields": ["enabled"], "enabled": enabled}
    try:
        async with audited(
            request, session.user_id, session.tenant_id, "webhook.update", target=webhook_id, details=details
        ):
            body = json_routes.WebhookUpdate(enabled=enabled)
            await json_routes.update_webhook(webhook_id, body, actor, admin, request)
    except AgentError as err:
        return await webhook_page(request, session, webhook_id, error=err)
    return see_other(f"{WEBHOOKS_PAGE}/{webhook_id}?done={'enabled' if enabled else 'disabled'}")


@router.post(
    f"{HOOK_PAGE}/test",
    summary="Dashboard: send a signed test event now; the page shows how the receiver answered",
    responses=responses(404, 409),
)
async def test_webhook(
    request: Request, webhook_id: Id, form: Annotated[DashboardForm, Form()], session: SessionDep
) -> HTMLResponse:
    checked(request, form)
    admin, actor = admin_services(request.app.state.services), actor_of(request, session)
    try:
        async with audited(request, session.user_id, session.tenant_id, "webhook.test", target=webhook_id):
            tested = await json_routes.test_webhook(webhook_id, actor, admin, request)
    except AgentError as err:
        return await webhook_page(request, session, webhook_id, error=err)
    return await webhook_page(request, session, webhook_id, tested=tested)


@router.post(
    f"{HOOK_PAGE}/rotate-secret",
    summary="Dashboard: replace a webhook's signing secret (the new one is shown once, on this answer only)",
    responses=responses(404),
)
async def rotate_secret(
    request: Request, webhook_id: Id, form: Annotated[DashboardForm, Form()], session: SessionDep
) -> HTMLResponse:
    checked(request, form)
    admin, actor = admin_services(request.app.state.services), actor_of(request, session)
    async with audited(
        request, session.user_id, session.tenant_id, "webhook.rotate_secret", target=webhook_id
    ):
        rotated = await json_routes.rotate_secret(webhook_id, actor, admin, request, Response())
    return page(request, "webhook_created.html", {"webhook": rotated, "rotated": True}, session=session)


@router.get(f"{HOOK_PAGE}/delete", summary="Dashboard: confirm deleting a webhook", responses=responses(404))
async def delete_page(request: Request, webhook_id: Id, session: SessionDep) -> HTMLResponse:
    admin = admin_services(request.app.state.services)
    hook = await json_routes.get_webhook(webhook_id, actor_of(request, session), admin)
    return page(request, "webhook_delete.html", {"webhook": hook}, session=session)


@router.post(
    f"{HOOK_PAGE}/delete",
    summary="Dashboard: delete a webhook; its pending deliveries stop",
    responses=responses(404),
)
async def delete_webhook(
    request: Request, webhook_id: Id, form: Annotated[DashboardForm, Form()], session: SessionDep
) -> Response:
    checked(request, form)
    admin, actor = admin_services(request.app.state.services), actor_of(request, session)
    async with audited(request, session.user_id, session.tenant_id, "webhook.delete", target=webhook_id):
        await json_routes.delete_webhook(webhook_id, actor, admin, request)
    return see_other(f"{WEBHOOKS_PAGE}?deleted={webhook_id}")


@router.post(
    f"{APP_PATH}/usage/thresholds",
    summary="Dashboard: set the usage alerts (percents of the plan's monthly token quota)",
    responses=responses(),
)
async def set_thresholds(
    request: Request, form: Annotated[ThresholdsForm, Form()], session: SessionDep
) -> Response:
    checked(request, form)
    admin, actor = admin_services(request.app.state.services), actor_of(request, session)
    try:
        async with audited(request, session.user_id, session.tenant_id, "usage_thresholds.set") as note:
            saved = await json_routes.set_thresholds(form.body(), actor, admin, request)
            note["details"]["percents"] = saved["percents"]
    except AgentError as err:
        return await list_page(request, session, thresholds_error=err, thresholds_form=form)
    return see_other(f"{WEBHOOKS_PAGE}?done=thresholds#usage-alerts")
