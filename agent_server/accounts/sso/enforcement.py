"""SSO enforcement: members of the tenant sign in through its identity provider only.

Enforcement needs an enabled connection and a verified domain; whatever would take the last of
either away while it is on (disabling or deleting a connection, deleting a domain) is refused, so
a tenant can never enforce a sign-in nobody can complete. Platform administrators keep password
and passkey sign-in as the way back in (Gateway.refuse_if_sso_enforced), and never sign in through a
tenant's provider (provision.py).

Single sign-on is a plan feature (``sso`` in plans.yaml). The tenant's flag (``sso_enforced``)
applies only while its plan has the feature: after a downgrade, ``is_enforced`` is False and
password and passkey sign-in work again (else members would be locked out of every way in), and
sign-ins through the provider are refused (``require_sso_plan``). The flag is kept, so enforcement
applies again after an upgrade.

Turning enforcement on ends the sessions of every member (not platform administrators) in the same
transaction: their earlier password and passkey tokens stop working at once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from agent_server.accounts.sso.provision import PLATFORM_ADMIN
from agent_server.accounts.tables import SsoConnection, TenantDomain
from agent_server.foundation.errors import Conflict, PlanLimitExceeded
from agent_server.gateway.tables import Tenant, User
from agent_server.storage.db import Database

if TYPE_CHECKING:
    from agent_server.gateway.plans import PlanCatalog

FEATURE = "sso"


def plan_has_sso(catalog: PlanCatalog, plan_id: str) -> bool:
    """Whether the plan includes single sign-on; an unknown plan does not."""
    plan = catalog.plans.get(plan_id)
    return plan is not None and FEATURE in plan.features


async def is_enforced(db: Database, tenant_id: str, catalog: PlanCatalog) -> bool:
    """Whether the tenant's members must sign in through its provider: the flag is on *and* the
    tenant's plan includes single sign-on."""
    query = select(Tenant.sso_enforced, Tenant.plan_id).where(Tenant.id == tenant_id)
    async with db.session() as session:
        row = (await session.execute(query)).first()
    return row is not None and bool(row[0]) and plan_has_sso(catalog, row[1])


async def require_sso_plan(db: Database, tenant_id: str, catalog: PlanCatalog) -> None:
    """403 plan_limit_exceeded (param sso) when the tenant's plan lacks single sign-on (a sign-in
    through its provider, started or finished after a downgrade)."""
    async with db.session() as session:
        plan_id = await session.scalar(select(Tenant.plan_id).where(Tenant.id == tenant_id))
    if plan_id is None:
        return  # no such tenant: the caller's connection lookup answers 404
    plan = catalog.plans.get(plan_id)
    if plan is None or FEATURE not in plan.features:
        name = plan.name if plan is not None else plan_id
        raise PlanLimitExceeded(
            f"The {name} plan of this organisation does not include single sign-on; sign in with a "
            "password or a passkey, or ask an administrator to upgrade the plan.",
            param=FEATURE,
        )


async def missing_for_enforcement(session: AsyncSession, tenant_id: str) -> str | None:
    """What the tenant lacks to enforce single sign-on, or None when it can."""
    connections = await session.scalar(
        select(func.count())
        .select_from(SsoConnection)
        .where(SsoConnection.tenant_id == tenant_id, SsoConnection.enabled.is_(True))  # type: ignore[attr-defined]
    )
    if not connections:
        return "an enabled SSO connection (PUT /admin/sso/oidc or PUT /admin/sso/saml)"
    domains = await session.scalar(
        select(func.count())
        .select_from(TenantDomain)
        .where(TenantDomain.tenant_id == tenant_id, TenantDomain.verified_at.is_not(None))  # type: ignore[union-attr]
    )
    if not domains:
        return "a verified domain (POST /admin/sso/domains, then .../verify)"
    return None


async def flag_on(session: AsyncSession, tenant_id: str) -> bool:
    """The tenant's enforcement flag, whatever its plan (``is_enforced`` says whether it applies)."""
    return bool(await session.scalar(select(Tenant.sso_enforced).where(Tenant.id == tenant_id)))


async def keep_enforceable(session: AsyncSession, tenant_id: str, change: str) -> None:
    """Call after a change (flushed) in ``session``: raises, and so rolls it back, if it breaks enforcement.

    The flag counts even while the plan lacks single sign-on: enforcement applies again on upgrade.
    """
    await session.flush()
    if await flag_on(session, tenant_id) and (missing := await missing_for_enforcement(session, tenant_id)):
        raise Conflict(
            f"Single sign-on is enforced for this organisation; {change} would leave it without {missing}. "
            "Turn enforcement off first (PATCH /admin/sso).",
            code="sso_enforced",
        )


async def set_enforced(db: Database, tenant_id: str, enforced: bool) -> None:
    """Turn enforcement on or off; switching it on ends every member's sessions in the same transaction."""
    async with db.session() as session:
        if enforced and (missing := await missing_for_enforcement(session, tenant_id)):
            raise Conflict(
                f"Single sign-on can be enforced only with {missing}.", code="sso_not_ready", param="enforced"
            )
        switched = await session.execute(
            update(Tenant)
            .where(Tenant.id == tenant_id, Tenant.sso_enforced.is_not(enforced))  # type: ignore[arg-type, attr-defined]
            .values(sso_enforced=enforced)
        )
        if enforced and switched.rowcount:  # type: ignore[attr-defined]
            await end_member_sessions(session, tenant_id)


async def end_member_sessions(session: AsyncSession, tenant_id: str) -> None:
    """Raise the token version of every user of the tenant who is not a platform administrator, so
    their password and passkey tokens issued before enforcement stop working."""
    query = select(User.id, User.permissions).where(User.tenant_id == tenant_id)
    members = [
        user_id for user_id, permissions in await session.execute(query) if PLATFORM_ADMIN not in permissions
    ]
    for start in range(0, len(members), 500):  # bound the IN list
        await session.execute(
            update(User)
            .where(User.id.in_(members[start : start + 500]))  # type: ignore[attr-defined]
            .values(token_version=User.token_version + 1)
        )
