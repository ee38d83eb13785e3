"""The platform super-admin surface (``platform:admin``): list tenants, change a tenant's plan."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import func, select

from agent_server.errors import NotFound, ValidationFailed
from agent_server.gateway.tables import PlanRecord, Tenant, User
from agent_server.webhooks.repository import iso
from http_facade.routes.admin_common import PlatformDep, audit_note

router = APIRouter(tags=["admin: platform"])


class TenantPatch(BaseModel):
    model_config = ConfigDict(extra="forbid")

    plan_id: str | None = Field(default=None, min_length=1, max_length=40)
    rate_limit_per_minute: int | None = Field(default=None, ge=1, le=1_000_000)


def tenant_view(tenant: Tenant, users: int) -> dict[str, Any]:
    return {
        "id": tenant.id,
        "object": "tenant",
        "name": tenant.name,
        "plan_id": tenant.plan_id,
        "rate_limit_per_minute": tenant.rate_limit_per_minute,
        "users": users,
        "trial_ends_at": iso(tenant.trial_ends_at),
        "created_at": iso(tenant.created_at),
    }


async def _users(session: Any, tenant_ids: list[str]) -> dict[str, int]:
    if not tenant_ids:
        return {}
    rows = await session.execute(
        select(User.tenant_id, func.count()).where(User.tenant_id.in_(tenant_ids)).group_by(User.tenant_id)  # type: ignore[attr-defined]
    )
    return {tenant_id: int(count) for tenant_id, count in rows.all()}


@router.get("/admin/platform/tenants", summary="Every tenant (platform:admin)")
async def list_tenants(
    actor: PlatformDep,
    request: Request,
    limit: int = Query(default=100, ge=1, le=500),
    offset: int = Query(default=0, ge=0),
) -> dict[str, Any]:
    db = request.app.state.services.db
    async with db.session() as session:
        total = await session.scalar(select(func.count()).select_from(Tenant))
        query = select(Tenant).order_by(Tenant.created_at, Tenant.id).offset(offset).limit(limit)
        tenants = list((await session.execute(query)).scalars())
        users = await _users(session, [t.id for t in tenants])
    return {
        "object": "list",
        "total": int(total or 0),
        "data": [tenant_view(t, users.get(t.id, 0)) for t in tenants],
    }


@router.patch("/admin/platform/tenants/{tenant_id}", summary="Change a tenant's plan or negotiated limit")
async def patch_tenant(
    tenant_id: str, body: TenantPatch, actor: PlatformDep, request: Request
) -> dict[str, Any]:
    changes = body.model_dump(exclude_unset=True)
    if not changes:
        raise ValidationFailed("Send plan_id and/or rate_limit_per_minute.", param="body")
    db = request.app.state.services.db
    async with db.session() as session:
        tenant = await session.get(Tenant, tenant_id)
        if tenant is None:
            raise NotFound(f"No tenant {tenant_id}.", param="tenant_id")
        before = tenant.plan_id
        if changes.get("plan_id") is not None and await session.get(PlanRecord, changes["plan_id"]) is None:
            raise ValidationFailed(f"Unknown plan '{changes['plan_id']}'.", param="plan_id")
        if changes.get("plan_id") is not None:
            tenant.plan_id = changes["plan_id"]
        if "rate_limit_per_minute" in changes:
            tenant.rate_limit_per_minute = changes["rate_limit_per_minute"]
        session.add(tenant)
        users = (await _users(session, [tenant.id])).get(tenant.id, 0)
    # Recorded under the changed tenant, so its own admins see who changed their plan.
    audit_note(
        request,
        action="platform.tenant.update",
        target=tenant_id,
        tenant_id=tenant_id,
        details={"plan_before": before, **changes, "by_tenant": actor.tenant_id},
    )
    return tenant_view(tenant, users)
