"""The platform's tenants for its administrators: listed (searched by name or id, filtered by plan,
with their standing: trial, active, refused...) and created, optionally inviting a first admin.

``GET``/``POST /admin/platform/tenants`` and the dashboard's ``/app/tenants`` both call these; the
callers record the audit entry their way (the JSON route through the audit middleware).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, or_, select
from sqlalchemy.exc import IntegrityError

from agent_server.accounts.names import organisation_name
from agent_server.accounts.roles import OWNER
from agent_server.billing.contracts import contract_end
from agent_server.billing.trial import Standing, StandingGate
from agent_server.foundation.clock import Clock
from agent_server.foundation.errors import Conflict, ValidationFailed
from agent_server.gateway import repository as repo
from agent_server.gateway.tables import PlanRecord, Tenant, User
from agent_server.storage.db import Database

MAX_SEARCH = 200


@dataclass(frozen=True, slots=True)
class TenantEntry:
    tenant: Tenant
    users: int
    standing: Standing | None  # None: the tenant went away while it was read


async def count_users(session: Any, tenant_ids: list[str]) -> dict[str, int]:
    if not tenant_ids:
        return {}
    rows = await session.execute(
        select(User.tenant_id, func.count()).where(User.tenant_id.in_(tenant_ids)).group_by(User.tenant_id)  # type: ignore[attr-defined]
    )
    return {tenant_id: int(count) for tenant_id, count in rows.all()}


async def find_tenants(
    db: Database,
    gate: StandingGate,
    *,
    search: str | None = None,
    plan_id: str | None = None,
    limit: int = 100,
    offset: int = 0,
) -> tuple[int, list[TenantEntry]]:
    """(how many match, the page of them): oldest first. ``search`` is a part of the name (any case)
    or the start of the id."""
    query = select(Tenant)
    if search and search.strip():
        needle = search.strip()[:MAX_SEARCH]
        query = query.where(
            or_(
                func.lower(Tenant.name).contains(needle.lower(), autoescape=True),
                Tenant.id.startswith(needle, autoescape=True),  # type: ignore[attr-defined]
            )
        )
    if plan_id:
        query = query.where(Tenant.plan_id == plan_id)
    async with db.session() as session:
        total = await session.scalar(select(func.count()).select_from(query.subquery()))
        ordered = query.order_by(Tenant.created_at, Tenant.id).offset(offset).limit(limit)  # type: ignore[arg-type]
        tenants = list((await session.execute(ordered)).scalars())
        users = await count_users(session, [t.id for t in tenants])
    standings = await gate.standings([t.id for t in tenants])
    entries = [TenantEntry(t, users.get(t.id, 0), standings.get(t.id)) for t in tenants]
    return int(total or 0), entries


async def create_tenant(
    db: Database,
    clock: Clock,
    accounts: Any,
    *,
    name: str,
    plan_id: str,
    rate_limit: int | None = None,
    admin_email: str | None = None,
    contract_ends_at: datetime | None = None,
) -> tuple[Tenant, str | None]:
    """The new tenant, and the e-mail address invited as its first admin (a link to choose a
    password, mailed once the transaction is committed), if any."""
    now = clock.now()
    async with db.session() as session:
        plan = await session.get(PlanRecord, plan_id)
        if plan is None:
            raise ValidationFailed(f"Unknown plan '{plan_id}'.", param="plan_id")
        tenant = repo.new_tenant(now, organisation_name(name, "name"), plan, rate_limit)
        tenant.contract_ends_at = contract_end(
            plan_name=plan.name,
            self_serve=plan.self_serve,
            moving_in=False,  # a new tenant starts with its trial; without an end, the trial is all
            ends_at=contract_ends_at,
            current=None,
            now=now,
        )
        try:
            session.add(tenant)
            await session.flush()
        except IntegrityError:
            raise Conflict(f"A tenant named '{tenant.name}' exists already.", param="name") from None
        if admin_email is not None:
            user = repo.new_user(now, tenant.id, admin_email, None, ["tenant:admin"], OWNER)
            try:
                session.add(user)
                await session.flush()
            except IntegrityError:
                raise Conflict(
                    f"A user with the e-mail {user.email} exists already.", param="admin_email"
                ) from None
            accounts.credentials.invite(session, tenant, user, now)
    accounts.mailer.wake()
    invited = admin_email.strip().lower() if admin_email is not None else None
    return tenant, invited
