"""The forms of ``/app/agent-commerce``: add an agent platform (its credential and signing secret
shown once, on the answer only), change where its order events go, revoke one, mark an order fulfilled or canceled, refund it. Each
calls the function of its ``/admin/platform/agent-*`` route with the session as the acting platform
admin and records the same audit action; a refusal draws the page again with its message."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import Form, Path, Request
from fastapi.responses import HTMLResponse, Response
from pydantic import Field

from agent_server.foundation.errors import AgentError
from http_facade.pages.dashboard.agent_commerce import AGENT_COMMERCE_PAGE, commerce_page
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
from http_facade.pages.dashboard.session import Session, current_session
from http_facade.pages.form_state import FormState, redisplays, sent_form
from http_facade.routes import admin_commerce as json_routes
from http_facade.routes.admin_common import Actor, platform_actor

router = dashboard_router()
Id = Annotated[str, Path(min_length=1, max_length=60, pattern=r"^[A-Za-z0-9_-]+$")]


class PlatformForm(DashboardForm):
    name: str = Field(min_length=2, max_length=200)
    webhook_url: str = Field(default="", max_length=2048, description="Empty: no order events.")


class WebhookForm(DashboardForm):
    webhook_url: str = Field(default="", max_length=2048, description="Empty: no order events.")


class OrderStatusForm(DashboardForm):
    status: Literal["completed", "canceled"]


async def _platform_admin(request: Request, session: Session) -> Actor:
    return await platform_actor(actor_of(request, session))  # 403 for anyone else


async def _create_again(request: Request, form: FormState) -> HTMLResponse:
    return await commerce_page(request, await current_session(request), form=form)


@router.post(
    f"{AGENT_COMMERCE_PAGE}/platforms",
    summary="Dashboard: add an agent platform; its credential and signing secret are shown once (platform admins)",
    responses=responses(409),
)
@redisplays(_create_again)
async def create_platform(
    request: Request, form: Annotated[PlatformForm, Form()], session: SessionDep
) -> HTMLResponse:
    checked(request, form)
    actor = await _platform_admin(request, session)
    try:
        body = json_body(
            json_routes.PlatformCreate, name=form.name, webhook_url=form.webhook_url.strip() or None
        )
        async with audited(
            request, session.user_id, session.tenant_id, "platform.agent_platform.create"
        ) as note:
            made = await json_routes.create_platform(body, actor, request)
            note["target"] = made["id"]
    except AgentError as err:
        if err.param == "url":  # the URL guard names its own field; the form calls it webhook_url
            err.param = "webhook_url"
        return await commerce_page(request, session, form=FormState.sent(await sent_form(request), err))
    return page(request, "agent_platform_created.html", {"platform": made}, session=session)


@router.post(
    f"{AGENT_COMMERCE_PAGE}/platforms/{{platform_id}}/revoke",
    summary="Dashboard: revoke an agent platform; its credential gets 401 at once (platform admins)",
    responses=responses(404),
)
async def revoke_platform(
    request: Request, platform_id: Id, form: Annotated[DashboardForm, Form()], session: SessionDep
) -> Response:
    checked(request, form)
    actor = await _platform_admin(request, session)
    async with audited(
        request, session.user_id, session.tenant_id, "platform.agent_platform.revoke", target=platform_id
    ):
        await json_routes.revoke_platform(platform_id, actor, request)
    return see_other(f"{AGENT_COMMERCE_PAGE}?done=revoked")


@router.post(
    f"{AGENT_COMMERCE_PAGE}/platforms/{{platform_id}}/webhook",
    summary="Dashboard: change where an agent platform's order events go; empty: nowhere (platform admins)",
    responses=responses(404, 409),
)
async def set_webhook(
    request: Request, platform_id: Id, form: Annotated[WebhookForm, Form()], session: SessionDep
) -> Response:
    checked(request, form)
    actor = await _platform_admin(request, session)
    details = {"webhook": bool(form.webhook_url.strip())}
    try:
        async with audited(
            request, session.user_id, session.tenant_id, "platform.agent_platform.update",
            target=platform_id, details=details,
        ):  # fmt: skip
            body = json_body(json_routes.PlatformUpdate, webhook_url=form.webhook_url.strip() or None)
            await json_routes.update_platform(platform_id, body, actor, request)
    except AgentError as err:
        return await commerce_page(request, session, error=err, error_at="platforms")
    return see_other(f"{AGENT_COMMERCE_PAGE}?done=webhook")


@router.post(
    f"{AGENT_COMMERCE_PAGE}/orders/{{order_id}}/status",
    summary="Dashboard: mark an agent order fulfilled or canceled (platform admins)",
    responses=responses(404, 409),
)
async def move_order(
    request: Request, order_id: Id, form: Annotated[OrderStatusForm, Form()], session: SessionDep
) -> Response:
    checked(request, form)
    actor = await _platform_admin(request, session)
    details = {"status": form.status}
    try:
        async with audited(
            request, session.user_id, session.tenant_id, "platform.agent_order.update",
            target=order_id, details=details,
        ):  # fmt: skip
            body = json_routes.OrderMove(status=form.status)
            await json_routes.move_order(order_id, body, actor, request)
    except AgentError as err:
        return await commerce_page(request, session, error=err)
    return see_other(f"{AGENT_COMMERCE_PAGE}?done={form.status}#order-{order_id}")


@router.post(
    f"{AGENT_COMMERCE_PAGE}/orders/{{order_id}}/refund",
    summary="Dashboard: refund an agent order in full at the payment provider (platform admins)",
    responses=responses(404, 409),
)
async def refund_order(
    request: Request, order_id: Id, form: Annotated[DashboardForm, Form()], session: SessionDep
) -> Response:
    checked(request, form)
    actor = await _platform_admin(request, session)
    try:
        async with audited(
            request, session.user_id, session.tenant_id, "platform.agent_order.refund", target=order_id
        ) as note:
            order = await json_routes.refund_order(order_id, actor, request)
            note["details"]["amount"] = order["refunded_minor"]
    except AgentError as err:
        return await commerce_page(request, session, error=err)
    return see_other(f"{AGENT_COMMERCE_PAGE}?done=refunded#order-{order_id}")
