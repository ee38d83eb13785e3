"""Just-in-time users: the account an identity provider of a tenant asserted, created on first sign-in.

The rules (docs/accounts.md, "Single sign-on"):

- the e-mail's domain must be a *verified* domain of the tenant whose provider asserted it, so a
  tenant's provider can never sign someone in as a person of another organisation;
- an existing user with that e-mail must belong to that tenant (never moved, never merged);
- a platform administrator never signs in through a tenant's provider (whoever controls that
  tenant's provider and DNS would otherwise gain platform rights): they sign in with a password or a
  passkey;
- a new user is created in that tenant, its e-mail counted as verified by the provider: with the
  role of a pending invitation of that address to the tenant (which is used up), else with the role
  the connection's permissions give (``tenant:admin``: admin; none: no role);
- a user who left or was removed (no organisation) comes back only with a pending invitation (403
  ``sso_not_a_member`` otherwise): the provider still knowing them does not undo a removal.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from agent_server.accounts import invitation_store as store
from agent_server.accounts.roles import permissions_with, role_from_permissions
from agent_server.accounts.tables import SsoConnection, TenantDomain
from agent_server.foundation.errors import Conflict, PermissionDenied
from agent_server.foundation.timeutil import utc
from agent_server.gateway import repository as repo
from agent_server.gateway.tables import User
from agent_server.storage.db import Database

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
    try:
        user = await _find_or_join(db, now, conn, email)
    except IntegrityError:  # the same person signing in twice at once: take the row the other made
        found = await repo.find_user(db, email)
        if found is None:
            raise
        user = found
    if user.tenant_id != conn.tenant_id:
        raise PermissionDenied(f"{email} belongs to another organisation.", code="sso_user_elsewhere")
    if PLATFORM_ADMIN in user.permissions:  # whichever way the row came: found, or made by a racing sign-in
        raise PermissionDenied(
            "Platform administrators cannot sign in through an organisation's identity provider; "
            "sign in with your password (POST /admin/auth/login) or a passkey (POST /admin/auth/passkey).",
            code="sso_platform_admin",
        )
    return user


async def _find_or_join(db: Database, now: float, conn: SsoConnection, email: str) -> User:
    """The user of ``email``: found, created (new), or joined to the tenant (no organisation, invited)."""
    async with db.session() as session:
        user = (await session.execute(select(User).where(User.email == email))).scalars().first()
        if user is not None and (user.tenant_id is not None or PLATFORM_ADMIN in user.permissions):
            return user  # the caller refuses another organisation's member and platform admins
        invitation = await store.pending_for(session, conn.tenant_id, email, now)
        if user is None:
            permissions = list(conn.config.get("jit_permissions", DEFAULT_PERMISSIONS))
            role = invitation.role if invitation else role_from_permissions(permissions)
            user = repo.new_user(now, conn.tenant_id, email, None, permissions, role)
            user.email_verified_at = utc(now)
            session.add(user)
            await session.flush()
        elif invitation is None:
            raise PermissionDenied(
                f"{email} is not a member of this organisation any more; ask an administrator for an "
                "invitation.",
                code="sso_not_a_member",
            )
        else:
            user.tenant_id, user.role = conn.tenant_id, invitation.role
            user.permissions = permissions_with(user.permissions, invitation.role)
        if invitation is not None and not await store.claim(session, invitation, user.id, now):
            raise Conflict("The invitation changed meanwhile; sign in again.", code="invitation_changed")
        return user
