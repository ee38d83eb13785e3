"""Operator actions behind ``agentgate tenants|users|keys``: run without a server, on its database.

Each opens the server's database (``operator_db``: it must exist already), does one thing, records
it in the audit log and closes it. Keys made here are ``sk_test_`` in sandbox mode and ``sk_live_``
in production mode, like keys made through the admin API; a revoked or rotated key is refused by
running servers within their key cache TTL, and a rotation queues the ``key.rotated`` webhook.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select

from agent_server.accounts import roles
from agent_server.accounts.password_policy import PasswordPolicy
from agent_server.billing.contracts import contract_end
from agent_server.billing.handlers import LIVE
from agent_server.billing.tables import BillingAccount
from agent_server.foundation.errors import NotFound, ValidationFailed
from agent_server.foundation.events import KeyRotated
from agent_server.foundation.settings import Settings
from agent_server.gateway import repository as repo
from agent_server.gateway.operator_db import Operator, operator_database
from agent_server.gateway.plans import check_scopes
from agent_server.gateway.tables import ApiKey, Tenant, User
from agent_server.storage.db import Database


async def _tenant(db: Database, id_or_name: str) -> Tenant:
    tenant = await repo.find_tenant(db, id_or_name)
    if tenant is None:
        raise NotFound(f"No tenant with the id or name '{id_or_name}'.", param="tenant")
    return tenant


# -- tenants -------------------------------------------------------------------------------------


async def create_tenant(
    settings: Settings,
    name: str,
    plan: str,
    rate_limit: int | None = None,
    contract_ends_at: datetime | None = None,
) -> Tenant:
    async with operator_database(settings) as op:
        now, info, end = op.clock.now(), op.catalog.plans.get(plan), None
        if info is not None:  # an unknown plan is refused by create_tenant
            # A new tenant starts with its trial: a negotiated plan's contract end is optional here.
            end = contract_end(
                plan_name=info.name,
                self_serve=info.self_serve,
                moving_in=False,
                ends_at=contract_ends_at,
                current=None,
                now=now,
                param="contract_end",
            )
        tenant = await repo.create_tenant(op.db, now, name, plan, rate_limit, end)
        await op.record(tenant.id, "tenant.create", tenant.id, plan=plan)
        return tenant


async def list_tenants(settings: Settings) -> list[Tenant]:
    async with operator_database(settings) as op, op.db.session() as session:
        return list((await session.execute(select(Tenant).order_by(Tenant.created_at, Tenant.id))).scalars())  # type: ignore[arg-type]


@dataclass(frozen=True)
class PlanChange:
    tenant: Tenant
    previous_plan: str
    paid_plan: str | None  # a live subscription paying for another plan: its next event sets that one


async def set_plan(
    settings: Settings,
    tenant: str,
    plan: str,
    rate_limit: int | None = None,
    contract_ends_at: datetime | None = None,
) -> PlanChange:
    """Move a tenant to ``plan`` (a negotiated one with its contract end; and set or keep its negotiated
    limit); keys follow within the cache TTL, the standing at each server's next scan."""
    async with operator_database(settings) as op:
        info = op.catalog.plans.get(plan)
        if info is None:
            raise ValidationFailed(
                f"Unknown plan '{plan}'; plans: {', '.join(sorted(op.catalog.plans))}.", param="plan"
            )
        tenant_id = (await _tenant(op.db, tenant)).id
        async with op.db.session() as session:
            record = await session.get(Tenant, tenant_id)
            if record is None:  # removed a moment ago
                raise NotFound(f"No tenant with the id or name '{tenant}'.", param="tenant")
            previous = record.plan_id
            record.contract_ends_at = contract_end(
                plan_name=info.name,
                self_serve=info.self_serve,
                moving_in=plan != previous,
                ends_at=contract_ends_at,
                current=record.contract_ends_at,
                now=op.clock.now(),
                param="contract_end",
            )
            record.plan_id = plan
            if rate_limit is not None:
                record.rate_limit_per_minute = rate_limit
            account = await session.get(BillingAccount, tenant_id)
        paid = account.plan_id if account and account.subscription_status in LIVE else None
        await op.record(record.id, "tenant.plan_change", record.id, previous=previous, plan=plan)
        return PlanChange(record, previous, paid if paid != plan else None)


# -- users ---------------------------------------------------------------------------------------


async def create_user(
    settings: Settings,
    tenant: str,
    email: str,
    password: str,
    *,
    role: str | None = None,
    admin: bool = False,
) -> User:
    """A user of ``tenant`` with ``role`` (``admin=True``: the role admin; neither: no role)."""
    role = roles.checked_role(role) if role is not None else (roles.ADMIN if admin else None)
    async with operator_database(settings) as op:
        owner = await _tenant(op.db, tenant)
        policy = PasswordPolicy(settings)  # the rule of every path that sets a password
        password_hash = await policy.hash_new(password, user_inputs=[email, owner.name])
        user = await repo.add_user(
            op.db, repo.new_user(op.clock.now(), owner.id, email, password_hash, [], role)
        )
        await op.record(owner.id, "user.create", user.id, role=role, permissions=list(user.permissions))
        return user


async def list_users(settings: Settings, tenant: str | None = None) -> list[User]:
    async with operator_database(settings) as op:
        query = select(User).order_by(User.created_at, User.id)  # type: ignore[arg-type]
        if tenant is not None:
            query = query.where(User.tenant_id == (await _tenant(op.db, tenant)).id)
        async with op.db.session() as session:
            return list((await session.execute(query)).scalars())


# -- keys ----------------------------------------------------------------------------------------


async def create_key(settings: Settings, tenant: str, name: str, scopes: list[str]) -> tuple[ApiKey, str]:
    async with operator_database(settings) as op:
        owner = await _tenant(op.db, tenant)
        wanted = check_scopes(op.catalog.get(owner.plan_id), scopes)
        environment = "test" if settings.sandbox else "live"
        record, full = repo.new_key(op.clock.now(), owner.id, name, wanted, environment)
        await repo.add_key(op.db, record)
        await op.record(owner.id, "api_key.create", record.id, scopes=wanted)
        return record, full


async def list_keys(settings: Settings, tenant: str | None = None) -> list[ApiKey]:
    async with operator_database(settings) as op:
        query = select(ApiKey).order_by(ApiKey.created_at, ApiKey.id)  # type: ignore[arg-type]
        if tenant is not None:
            query = query.where(ApiKey.tenant_id == (await _tenant(op.db, tenant)).id)
        async with op.db.session() as session:
            return list((await session.execute(query)).scalars())


async def _key(op: Operator, key_id: str) -> ApiKey:
    async with op.db.session() as session:
        record = await session.get(ApiKey, key_id)
    if record is None:
        raise NotFound(f"No API key {key_id}.", param="key_id")
    return record


async def revoke_key(settings: Settings, key_id: str) -> tuple[ApiKey, bool]:
    """(the key, whether this call revoked it): revoking a revoked key changes nothing."""
    async with operator_database(settings) as op:
        before = await _key(op, key_id)
        record = await repo.revoke_key(op.db, op.clock.now(), before.tenant_id, key_id)
        if before.revoked_at is None:
            await op.record(record.tenant_id, "api_key.revoke", key_id)
        return record, before.revoked_at is None


async def rotate_key(settings: Settings, key_id: str) -> tuple[ApiKey, ApiKey, str]:
    """(old, new, full new key): the new key keeps the old one's name, scopes and settings."""
    async with operator_database(settings) as op:
        tenant_id = (await _key(op, key_id)).tenant_id
        now = op.clock.now()
        old, new, full = await repo.rotate_key(op.db, now, tenant_id, key_id)
        await op.events.publish(
            KeyRotated(
                tenant_id=tenant_id, occurred_at=now, old_key_id=old.id, new_key_id=new.id, name=new.name
            )
        )
        await op.record(tenant_id, "api_key.rotate", key_id, replaced_by=new.id)
        return old, new, full
