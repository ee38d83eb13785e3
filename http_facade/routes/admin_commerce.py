"""The platform administrator's side of agentic commerce (``platform:admin``): the agent platforms
that may buy over ACP (credential and signing secret shown once) and the orders they placed, moved
on to fulfilled or canceled (docs/agentic-commerce.md)."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Query, Request, status
from pydantic import BaseModel, ConfigDict, Field

from agent_server.commerce.platforms import CREDENTIAL_ONCE, platform_view
from agent_server.commerce.tables import CommerceOrderRecord
from agent_server.commerce.wiring import Commerce
from agent_server.foundation.timeutil import iso
from http_facade.routes.admin_common import PlatformDep, audit_note

router = APIRouter(tags=["admin: platform"])
PLATFORMS = "/admin/platform/agent-platforms"
ORDERS = "/admin/platform/agent-orders"


class PlatformCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=2, max_length=200, description="Shown in the order list and logs.")
    webhook_url: str | None = Field(
        default=None, max_length=2048, description="Where order events are sent (https)."
    )


class PlatformUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    webhook_url: str | None = Field(
        max_length=2048, description="Where order events are sent from now on (https); null: nowhere."
    )


class OrderMove(BaseModel):
    model_config = ConfigDict(extra="forbid")

    status: Literal["completed", "canceled"] = Field(
        description="completed: delivered (fulfilled); canceled: called off."
    )


def commerce(request: Request) -> Commerce:
    return request.app.state.commerce


def admin_order_view(order: CommerceOrderRecord) -> dict[str, Any]:
    return {
        "id": order.id,
        "object": "agent_order",
        "platform_id": order.platform_id,
        "checkout_session_id": order.checkout_session_id,
        "status": order.status,
        "currency": order.currency,
        "amount_minor": order.amount_minor,
        "payment_provider": order.payment_provider,
        "payment_ref": order.payment_ref,
        "email": order.email,
        "lines": order.lines,
        "refunded_minor": order.refunded_minor,
        "refund_ref": order.refund_ref,
        "created_at": iso(order.created_at),
        "updated_at": iso(order.updated_at),
    }


@router.get(PLATFORMS, summary="The agent platforms allowed to buy over ACP (platform:admin)")
async def list_platforms(actor: PlatformDep, request: Request) -> dict[str, Any]:
    rows = await commerce(request).platforms.list()
    return {"object": "list", "data": [platform_view(row) for row in rows]}


@router.post(
    PLATFORMS,
    status_code=status.HTTP_201_CREATED,
    summary="Add an agent platform; its credential and signing secret are shown once (platform:admin)",
)
async def create_platform(body: PlatformCreate, actor: PlatformDep, request: Request) -> dict[str, Any]:
    made = await commerce(request).platforms.create(body.name, body.webhook_url)
    audit_note(request, action="platform.agent_platform.create", target=made.platform.id)
    return {
        **platform_view(made.platform),
        "credential": made.credential,
        "signing_secret": made.signing_secret,
        "note": CREDENTIAL_ONCE,
    }


@router.patch(
    PLATFORMS + "/{platform_id}",
    summary="Change where an agent platform's order events are sent (platform:admin)",
)
async def update_platform(
    platform_id: str, body: PlatformUpdate, actor: PlatformDep, request: Request
) -> dict[str, Any]:
    platform = await commerce(request).platforms.set_webhook_url(platform_id, body.webhook_url)
    audit_note(
        request,
        action="platform.agent_platform.update",
        target=platform.id,
        details={"webhook": platform.webhook_url is not None},
    )
    return platform_view(platform)


@router.delete(
    PLATFORMS + "/{platform_id}", summary="Revoke an agent platform's credential at once (platform:admin)"
)
async def revoke_platform(platform_id: str, actor: PlatformDep, request: Request) -> dict[str, Any]:
    platform = await commerce(request).platforms.revoke(platform_id)
    audit_note(request, action="platform.agent_platform.revoke", target=platform.id)
    return platform_view(platform)


@router.get(ORDERS, summary="Orders placed by agent platforms, newest first (platform:admin)")
async def list_orders(
    actor: PlatformDep, request: Request, limit: int = Query(default=100, ge=1, le=500)
) -> dict[str, Any]:
    rows = await commerce(request).orders.recent(limit)
    return {"object": "list", "data": [admin_order_view(row) for row in rows]}


@router.patch(ORDERS + "/{order_id}", summary="Mark an agent order fulfilled or canceled (platform:admin)")
async def move_order(order_id: str, body: OrderMove, actor: PlatformDep, request: Request) -> dict[str, Any]:
    order = await commerce(request).orders.move(order_id, body.status)
    audit_note(
        request, action="platform.agent_order.update", target=order.id, details={"status": body.status}
    )
    return admin_order_view(order)


@router.post(
    ORDERS + "/{order_id}/refund",
    summary="Refund an agent order in full at the payment provider (platform:admin)",
)
async def refund_order(order_id: str, actor: PlatformDep, request: Request) -> dict[str, Any]:
    order = await commerce(request).orders.refund(order_id)
    audit_note(
        request,
        action="platform.agent_order.refund",
        target=order.id,
        details={"amount": order.refunded_minor},
    )
    return admin_order_view(order)
