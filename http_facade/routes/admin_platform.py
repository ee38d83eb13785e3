"""The platform super-admin surface (``platform:admin``): list (search) and create tenants, change a
tenant's plan. Listing and creating are ``agent_server/admin/tenant_directory.py``, which the dashboard's
``/app/tenants`` calls too. A negotiated plan (no list price) is set with the end of its contract
(``contract_ends_at``; the rule: agent_server/billing/contracts.py, docs/billing.md "Plans")."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, Request, status
from pydantic import AwareDatetime, BaseModel, ConfigDict, EmailStr, Field

from agent_server.admin.tenant_directory import MAX_SEARCH, TenantEntry, count_users, find_tenants
from agent_server.admin.tenant_directory import create_tenant as new_tenant
from agent_server.billing.contracts import contract_end
from agent_server.billing.engine import STANDING_GATE
from agent_server.billing.trial import standing_view
from agent_server.foundation.errors import NotFound, ValidationFailed
from agent_server.gateway.tables import PlanRecord, Tenant
from agent_server.webhooks.repository import iso
from http_facade.routes.admin_common import PlatformDep, audit_note

router = APIRouter(tags=["admin: platform"])


CONTRACT_END = (
    "A negotiated plan only (no list price): when its contract ends (RFC 3339 with an offset, in the "
    "future, at most ten years away). From then on, or without one after the trial, live keys get 402."
)


class TenantCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=2, max_length=200)
    plan_id: str = Field(min_length=1, max_length=40)
    rate_limit_per_minute: int | None = Field(default=None, ge=1, le=1_000_000)
    admin_email: EmailStr | None = Field(
        default=None,
        description="Invited as the tenant's first admin: a link to choose a password is mailed.",
    )
    contract_ends_at: AwareDatetime | None = Field(default=None, description=CONTRACT_END)


class TenantPatch(BaseModel):
    model_config = ConfigDict(extra="forbid")

    plan_id: str | None = Field(default=None, min_length=1, max_length=40)
    rate_limit_per_minute: int | None = Field(default=None, ge=1, le=1_000_000)
    contract_ends_at: AwareDatetime | None = Field(
        default=None, description=f"{CONTRACT_END} Needed to move a tenant onto a negotiated plan."
    )


def tenant_view(tenant: Tenant, users: int) -> dict[str, Any]:
    return {
        "id": tenant.id,
        "object": "tenant",
        "name": tenant.name,
        "plan_id": tenant.plan_id,
        "rate_limit_per_minute": tenant.rate_limit_per_minute,
        "users": users,
        "trial_ends_at": iso(tenant.trial_ends_at),
        "contract_ends_at": iso(tenant.contract_ends_at) if tenant.contract_ends_at else None,
        "created_at": iso(tenant.created_at),
    }


_users = count_users  # the users of each tenant (tenant_directory), as the plan change shows them


def standing_of(entry: TenantEntry, request: Request) -> dict[str, Any] | None:
    """The entry's standing as the billing status shows it (``standing_view``)."""
    if entry.standing is None:
        return None
    gate = request.app.state.services.extras[STANDING_GATE]
    return standing_view(entry.standing, gate.clock.now(), gate.status_url)


def entry_view(entry: TenantEntry, request: Request) -> dict[str, Any]:
    return {**tenant_view(entry.tenant, entry.users), "standing": standing_of(entry, request)}


@router.get(
    "/admin/platform/tenants",
    summary="Every tenant, searched by name or id and filtered by plan (platform:admin)",
)
async def list_tenants(
    actor: PlatformDep,
    request: Request,
    limit: int = Query(default=100, ge=1, le=500),
    offset: int = Query(default=0, ge=0, le=1_000_000),  # beyond: SQL integer overflow (500)
    q: str | None = Query(
        default=None,
        max_length=MAX_SEARCH,
        description="A part of the name (any case) or the start of the id.",
    ),
    plan_id: str | None = Query(
        default=None, min_length=1, max_length=40, description="Only tenants on this plan."
    ),
) -> dict[str, Any]:
    services = request.app.state.services
    total, entries = await find_tenants(
        services.db, services.extras[STANDING_GATE], search=q, plan_id=plan_id, limit=limit, offset=offset
    )
    return {"object": "list", "total": total, "data": [entry_view(entry, request) for entry in entries]}


@router.post(
    "/admin/platform/tenants",
    status_code=status.HTTP_201_CREATED,
    summary="Create a tenant, optionally inviting its first admin by e-mail (platform:admin)",
)
async def create_tenant(body: TenantCreate, actor: PlatformDep, request: Request) -> dict[str, Any]:
    services = request.app.state.services
    tenant, invited = await new_tenant(
        services.db,
        services.clock,
        request.app.state.accounts,
        name=body.name,
        plan_id=body.plan_id,
        rate_limit=body.rate_limit_per_minute,
        contract_ends_at=body.contract_ends_at,
        admin_email=None if body.admin_email is None else str(body.admin_email),
    )
    audit_note(
        request,
        action="platform.tenant.create",
        target=tenant.id,
        tenant_id=tenant.id,
        details={"plan": tenant.plan_id, "invited": invited is not None, "by_tenant": actor.tenant_id},
    )
    return {**tenant_view(tenant, 1 if invited else 0), "invited": invited}


async def _refresh_standing(request: Request, tenant_id: str) -> None:
    """A new plan or contract end decides the tenant's standing in this process now, not at the next
    scan (other processes follow at theirs, within AGENTGATE_QUOTA_CHECK_SECONDS)."""
    gate = request.app.state.services.extras.get(STANDING_GATE)
    if gate is not None:
        await gate.refresh(tenant_id)


@router.patch(
    "/admin/platform/tenants/{tenant_id}",
    summary="Change a tenant's plan (a negotiated one with its contract end) or negotiated limit",
)
async def patch_tenant(
    tenant_id: str, body: TenantPatch, actor: PlatformDep, request: Request
) -> dict[str, Any]:
    changes = body.model_dump(exclude_unset=True)
    if not changes:
        raise ValidationFailed("Send plan_id, rate_limit_per_minute and/or contract_ends_at.", param="body")
    services = request.app.state.services
    async with services.db.session() as session:
        tenant = await session.get(Tenant, tenant_id)
        if tenant is None:
            raise NotFound(f"No tenant {tenant_id}.", param="tenant_id")
        before = tenant.plan_id
        plan = await session.get(PlanRecord, body.plan_id or tenant.plan_id)
        if plan is None:
            raise ValidationFailed(f"Unknown plan '{body.plan_id}'.", param="plan_id")
        tenant.contract_ends_at = contract_end(
            plan_name=plan.name,
            self_serve=plan.self_serve,
            moving_in=plan.id != before,
            ends_at=body.contract_ends_at,
            current=tenant.contract_ends_at,
            now=services.clock.now(),
        )
        tenant.plan_id = plan.id
        if "rate_limit_per_minute" in changes:
            tenant.rate_limit_per_minute = changes["rate_limit_per_minute"]
        session.add(tenant)
        users = (await _users(session, [tenant.id])).get(tenant.id, 0)
    await _refresh_standing(request, tenant_id)
    # Recorded under the changed tenant, so its own admins see who changed their plan.
    audit_note(
        request,
        action="platform.tenant.update",
        target=tenant_id,
        tenant_id=tenant_id,
        details={
            "plan_before": before,
            **body.model_dump(mode="json", exclude_unset=True),
            "by_tenant": actor.tenant_id,
        },
    )
    return tenant_view(tenant, users)
