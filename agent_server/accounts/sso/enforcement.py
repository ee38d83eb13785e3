"""SSO enforcement: members of the tenant sign in through its identity provider only.

Enforcement needs an enabled connection and a verified domain; whatever would take the last of
either away while it is on (disabling or deleting a connection, deleting a domain) is refused, so
a tenant can never enforce a sign-in nobody can complete. Platform administrators keep password
sign-in as the way back in (Gateway.refuse_if_sso_enforced).
"""

from __future__ import annotations

from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from agent_server.accounts.tables import SsoConnection, TenantDomain
from agent_server.errors import Conflict
from agent_server.gateway.tables import Tenant
from agent_server.storage.db import Database


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


async def is_enforced(session: AsyncSession, tenant_id: str) -> bool:
    return bool(await session.scalar(select(Tenant.sso_enforced).where(Tenant.id == tenant_id)))


async def keep_enforceable(session: AsyncSession, tenant_id: str, change: str) -> None:
    """Call after a change (flushed) in ``session``: raises, and so rolls it back, if it breaks enforcement."""
    await session.flush()
    if await is_enforced(session, tenant_id) and (
        missing := await missing_for_enforcement(session, tenant_id)
    ):
        raise Conflict(
            f"Single sign-on is enforced for this organisation; {change} would leave it without {missing}. "
            "Turn enforcement off first (PATCH /admin/sso).",
            code="sso_enforced",
        )


async def set_enforced(db: Database, tenant_id: str, enforced: bool) -> None:
    async with db.session() as session:
        if enforced and (missing := await missing_for_enforcement(session, tenant_id)):
            raise Conflict(
                f"Single sign-on can be enforced only with {missing}.", code="sso_not_ready", param="enforced"
            )
        await session.execute(update(Tenant).where(Tenant.id == tenant_id).values(sso_enforced=enforced))  # type: ignore[arg-type]
