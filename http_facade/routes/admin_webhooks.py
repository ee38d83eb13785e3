"""Webhook endpoints of the caller's tenant, their delivery log, test pings and usage thresholds.

The signing secret is in the creation response only. Another tenant's webhook id answers 404.
A test ping is sent at once, not retried, and reports only status code and latency: the
receiver's body is never reflected (OWASP API7).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, Request, Response, status
from pydantic import BaseModel, ConfigDict, Field, StrictBool

from agent_server.foundation.errors import Conflict, ValidationFailed
from agent_server.webhooks.repository import EVENT_TYPES, TEST_EVENT, iso
from agent_server.webhooks.tables import WebhookAttemptRecord, WebhookDeliveryRecord, WebhookRecord
from http_facade.routes.admin_common import ActorDep, AdminDep, audit_note, require_feature

router = APIRouter(tags=["admin: webhooks"])


class WebhookCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str = Field(min_length=8, max_length=2048, description="https URL of the receiver.")
    events: list[str] = Field(min_length=1, max_length=len(EVENT_TYPES), description=", ".join(EVENT_TYPES))
    description: str = Field(default="", max_length=200)


class WebhookUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str | None = Field(default=None, min_length=8, max_length=2048)
    events: list[str] | None = Field(default=None, min_length=1, max_length=len(EVENT_TYPES))
    description: str | None = Field(default=None, max_length=200)
    enabled: StrictBool | None = None


class Thresholds(BaseModel):
    model_config = ConfigDict(extra="forbid")

    percents: list[int] = Field(max_length=10, description="Percents of the plan's monthly token quota.")


def webhook_view(record: WebhookRecord) -> dict[str, Any]:
    return {
        "id": record.id,
        "object": "webhook",
        "url": record.url,
        "events": list(record.events),
        "description": record.description,
        "enabled": record.enabled,
        "disabled_reason": record.disabled_reason,
        "created_at": iso(record.created_at),
    }


def attempt_view(attempt: WebhookAttemptRecord) -> dict[str, Any]:
    return {
        "attempt": attempt.attempt,
        "at": iso(attempt.at),
        "status_code": attempt.status_code,
        "latency_ms": attempt.latency_ms,
        "error": attempt.error,
    }


def delivery_view(delivery: WebhookDeliveryRecord, attempts: list[WebhookAttemptRecord]) -> dict[str, Any]:
    return {
        "id": delivery.id,
        "event_id": delivery.event_id,
        "event_type": delivery.event_type,
        "status": delivery.status,
        "attempts": [attempt_view(a) for a in attempts],
        "next_attempt_at": iso(delivery.next_attempt_at) if delivery.status == "pending" else None,
        "created_at": iso(delivery.created_at),
        "finished_at": iso(delivery.finished_at),
    }


@router.post("/admin/webhooks", status_code=status.HTTP_201_CREATED, summary="Register a webhook")
async def create_webhook(
    body: WebhookCreate, actor: ActorDep, admin: AdminDep, request: Request
) -> dict[str, Any]:
    await require_feature(request, actor, "webhooks")
    record, secret = await admin.webhooks.create(actor.tenant_id, body.url, body.events, body.description)
    audit_note(request, action="webhook.create", target=record.id, details={"events": record.events})
    return {**webhook_view(record), "secret": secret}


@router.get("/admin/webhooks", summary="The tenant's webhooks, without secrets")
async def list_webhooks(actor: ActorDep, admin: AdminDep) -> dict[str, Any]:
    records = await admin.webhooks.list(actor.tenant_id)
    return {"object": "list", "event_types": list(EVENT_TYPES), "data": [webhook_view(r) for r in records]}


@router.get("/admin/webhooks/{webhook_id}", summary="One webhook, without its secret")
async def get_webhook(webhook_id: str, actor: ActorDep, admin: AdminDep) -> dict[str, Any]:
    return webhook_view(await admin.webhooks.get(actor.tenant_id, webhook_id))


@router.delete("/admin/webhooks/{webhook_id}", summary="Delete a webhook; its pending deliveries stop")
async def delete_webhook(
    webhook_id: str, actor: ActorDep, admin: AdminDep, request: Request
) -> dict[str, Any]:
    await admin.webhooks.delete(actor.tenant_id, webhook_id)
    audit_note(request, action="webhook.delete", target=webhook_id)
    return {"id": webhook_id, "object": "webhook", "deleted": True}


@router.post("/admin/webhooks/{webhook_id}/test", summary="Send a signed test event now (not retried)")
async def test_webhook(webhook_id: str, actor: ActorDep, admin: AdminDep, request: Request) -> dict[str, Any]:
    hook = await admin.webhooks.get(actor.tenant_id, webhook_id)
    await require_feature(request, actor, "webhooks")
    if not hook.enabled:
        raise Conflict(f"The webhook is disabled ({hook.disabled_reason}); PATCH enabled=true first.")
    data = {"message": "Test event from the administration API.", "webhook_id": webhook_id}
    # Queued with this worker's lease already held, so no background worker sends (or retries) it.
    [delivery_id] = await admin.webhooks.enqueue(
        actor.tenant_id, TEST_EVENT, data, webhook_id=webhook_id, lease=admin.worker.lease()
    )
    await admin.worker.send_now(delivery_id)
    audit_note(request, action="webhook.test", target=webhook_id)
    delivery, attempts = await admin.webhooks.delivery(actor.tenant_id, delivery_id)
    last = attempts[-1] if attempts else None
    return {
        "delivery_id": delivery_id,
        "event_type": TEST_EVENT,
        "delivered": delivery.status == "delivered",
        "status_code": last.status_code if last else None,
        "latency_ms": last.latency_ms if last else None,
        "error": last.error if last else delivery.last_error,
    }


@router.post(
    "/admin/webhooks/{webhook_id}/rotate-secret",
    summary="Replace the signing secret; the new one is in this response only",
)
async def rotate_secret(
    webhook_id: str, actor: ActorDep, admin: AdminDep, request: Request, response: Response
) -> dict[str, Any]:
    record, secret = await admin.webhooks.rotate_secret(actor.tenant_id, webhook_id)
    audit_note(request, action="webhook.rotate_secret", target=webhook_id)
    response.headers["Cache-Control"] = "no-store"
    return {**webhook_view(record), "secret": secret}


@router.patch("/admin/webhooks/{webhook_id}", summary="Change url, events, description or enabled")
async def update_webhook(
    webhook_id: str, body: WebhookUpdate, actor: ActorDep, admin: AdminDep, request: Request
) -> dict[str, Any]:
    await admin.webhooks.get(actor.tenant_id, webhook_id)  # another tenant's id: 404 before anything else
    changes = {k: v for k, v in body.model_dump(exclude_unset=True).items() if v is not None}
    if not changes:
        raise ValidationFailed("Send at least one of url, events, description, enabled.", param="body")
    if changes.get("enabled") is True:
        await require_feature(request, actor, "webhooks")
    record = await admin.webhooks.update(actor.tenant_id, webhook_id, changes)
    audit_note(request, action="webhook.update", target=webhook_id, details={"fields": sorted(changes)})
    return webhook_view(record)


@router.get("/admin/webhooks/{webhook_id}/deliveries", summary="Deliveries and every attempt, newest first")
async def list_deliveries(
    webhook_id: str, actor: ActorDep, admin: AdminDep, limit: int = Query(default=50, ge=1, le=100)
) -> dict[str, Any]:
    items = await admin.webhooks.deliveries(actor.tenant_id, webhook_id, limit)
    return {"object": "list", "webhook_id": webhook_id, "data": [delivery_view(d, a) for d, a in items]}


@router.post(
    "/admin/webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver",
    status_code=status.HTTP_202_ACCEPTED,
    summary="Send a delivery's event again (same payload and event id), with retries",
)
async def redeliver(
    webhook_id: str, delivery_id: str, actor: ActorDep, admin: AdminDep, request: Request
) -> dict[str, Any]:
    await admin.webhooks.get(actor.tenant_id, webhook_id)  # another tenant's id: 404 before anything else
    await require_feature(request, actor, "webhooks")
    delivery = await admin.webhooks.redeliver(actor.tenant_id, webhook_id, delivery_id)
    admin.worker.wake()
    audit_note(request, action="webhook.redeliver", target=webhook_id, details={"of": delivery_id})
    return delivery_view(delivery, [])


@router.get("/admin/usage/thresholds", summary="The tenant's usage thresholds")
async def get_thresholds(actor: ActorDep, admin: AdminDep) -> dict[str, Any]:
    used, quota = await admin.thresholds.usage(actor.tenant_id)
    return {
        "percents": await admin.thresholds.get(actor.tenant_id),
        "tokens_used_this_month": used,
        "monthly_token_quota": quota,
    }


@router.put("/admin/usage/thresholds", summary="Set the tenant's usage thresholds")
async def set_thresholds(
    body: Thresholds, actor: ActorDep, admin: AdminDep, request: Request
) -> dict[str, Any]:
    percents = await admin.thresholds.set(actor.tenant_id, body.percents)
    audit_note(request, action="usage_thresholds.set", details={"percents": percents})
    await admin.thresholds.check(actor.tenant_id)  # a lowered threshold may be crossed already
    return {"percents": percents}
