"""The platform super-admin surface (``platform:admin``): list tenants, change a tenant's plan."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, Request, status
from pydantic import BaseModel, ConfigDict, EmailStr, Field
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from agent_server.accounts.names import organisation_name
from agent_server.accounts.roles import OWNER
from agent_server.errors import Conflict, NotFound, ValidationFailed
from agent_server.gateway import repository as repo
from agent_server.gateway.tables import PlanRecord, Tenant, User
from agent_server.webhooks.repository import iso
from http_facade.routes.admin_common import PlatformDep, audit_note

router = APIRouter(tags=["admin: platform"])


class TenantCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=2, max_length=200)
    plan_id: str = Field(min_length=1, max_length=40)
    rate_limit_per_minute: int | None = Field(default=None, ge=1, le=1_000_000)
    admin_email: EmailStr | None = Field(
        default=None,
        description="Invited as the tenant's first admin: a link to choose a password is mailed.",
    )


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
    offset: int = Query(default=0, ge=0, le=1_000_000),  # beyond: SQL integer overflow (500)
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


@router.post(
    "/admin/platform/tenants",
    status_code=status.HTTP_201_CREATED,
    summary="Create a tenant, optionally inviting its first admin by e-mail (platform:admin)",
)
async def create_tenant(body: TenantCreate, actor: PlatformDep, request: Request) -> dict[str, Any]:
    services, accounts = request.app.state.services, request.app.state.accounts
    now = services.clock.now()
    async with services.db.session() as session:
        plan = await session.get(PlanRecord, body.plan_id)
        if plan is None:
            raise ValidationFailed(f"Unknown plan '{body.plan_id}'.", param="plan_id")
        tenant = repo.new_tenant(now, organisation_name(body.name, "name"), plan, body.rate_limit_per_minute)
        try:
            session.add(tenant)
            await session.flush()
        except IntegrityError:
            raise Conflict(f"A tenant named '{tenant.name}' exists already.", param="name") from None
        if body.admin_email is not None:
            user = repo.new_user(now, tenant.id, str(body.admin_email), None, ["tenant:admin"], OWNER)
            try:
                session.add(user)
                await session.flush()
            except IntegrityError:
                raise Conflict(
                    f"A user with the e-mail {user.email} exists already.", param="admin_email"
                ) from None
            accounts.credentials.invite(session, tenant, user, now)
    accounts.mailer.wake()
    audit_note(
        request,
        action="platform.tenant.create",
        target=tenant.id,
        tenant_id=tenant.id,
        details={
            "plan": tenant.plan_id,
            "invited": body.admin_email is not None,
            "by_tenant": actor.tenant_id,
        },
    )
    invited = str(body.admin_email).strip().lower() if body.admin_email is not None else None
    return {**tenant_view(tenant, 1 if invited else 0), "invited": invited}


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
