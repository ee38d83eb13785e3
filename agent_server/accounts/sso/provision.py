"""Just-in-time users: the account an identity provider of a tenant asserted, created on first sign-in.

The rules (docs/accounts.md, "Single sign-on"):

- the e-mail's domain must be a *verified* domain of the tenant whose provider asserted it, so a
  tenant's provider can never sign someone in as a person of another organisation;
- an existing user with that e-mail must belong to that tenant (never moved, never merged);
- a platform administrator never signs in through a tenant's provider (whoever controls that
  tenant's provider and DNS would otherwise gain platform rights): they sign in with a password or a
  passkey;
- a new user is created in that tenant with the connection's permissions, its e-mail counted as
  verified by the provider.
"""

from __future__ import annotations

from sqlalchemy import select

from agent_server.accounts.tables import SsoConnection, TenantDomain
from agent_server.errors import Conflict, PermissionDenied
from agent_server.gateway import repository as repo
from agent_server.gateway.tables import User
from agent_server.storage.db import Database
from agent_server.timeutil import utc

DEFAULT_PERMISSIONS = ["tenant:admin"]
PLATFORM_ADMIN = "platform:admin"


def domain_of(email: str) -> str:
    return email.rsplit("@", 1)[-1].strip().rstrip(".").lower()


async def connection(db: Database, tenant_id: str, protocol: str) -> SsoConnection | None:
    query = select(SsoConnection).where(
        SsoConnection.tenant_id == tenant_id, SsoConnection.protocol == protocol
    )
    async with db.session() as session:
        return (await session.execute(query)).scalars().first()


async def tenant_for_domain(db: Database, domain: str) -> str | None:
    """The tenant that verified ``domain``, if any."""
    query = select(TenantDomain.tenant_id).where(
        TenantDomain.domain == domain.lower(),
        TenantDomain.verified_at.is_not(None),  # type: ignore[union-attr]
    )
    async with db.session() as session:
        return await session.scalar(query)


async def provision(db: Database, now: float, conn: SsoConnection, email: str) -> User:
    """The user ``conn``'s provider asserted as ``email``, created in the connection's tenant if new."""
    email = email.strip().lower()
    if await tenant_for_domain(db, domain_of(email)) != conn.tenant_id:
        raise PermissionDenied(
            f"The domain of {email} is not a verified domain of this organisation.",
            code="sso_domain_not_verified",
        )
    user = await repo.find_user(db, email)
    if user is None:
        permissions = list(conn.config.get("jit_permissions", DEFAULT_PERMISSIONS))
        user = repo.new_user(now, conn.tenant_id, email, None, permissions)
        user.email_verified_at = utc(now)
        try:
            return await repo.add_user(db, user)
        except Conflict:  # the same person signing in twice at once: take the row the other made
            user = await repo.find_user(db, email)
            if user is None:
                raise
    if user.tenant_id != conn.tenant_id:
        raise PermissionDenied(f"{email} belongs to another organisation.", code="sso_user_elsewhere")
    if PLATFORM_ADMIN in user.permissions:  # whichever way the row came: found, or made by a racing sign-in
        raise PermissionDenied(
            "Platform administrators cannot sign in through an organisation's identity provider; "
            "sign in with your password (POST /admin/auth/login) or a passkey (POST /admin/auth/passkey).",
            code="sso_platform_admin",
        )
    return user
