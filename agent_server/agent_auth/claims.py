"""An address registers: the anonymous keys issued to it become the new organisation's keys.

Called by registration (agent_server/accounts/registration.py) in the transaction that uses the
e-mail link up, so the organisation and its keys appear together. Only keys still live move, and
they stop expiring: they are now keys of an organisation like any other (docs/oauth.md). Keys of an
address that already had an account stay anonymous: whoever knows an address must not be able to
put keys into someone else's organisation.
"""

from __future__ import annotations

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession

from agent_server.agent_auth.addresses import digest
from agent_server.agent_auth.tables import AnonymousIdentity
from agent_server.foundation.timeutil import utc
from agent_server.gateway import repository as repo
from agent_server.gateway.tables import ApiKey


async def claim_anonymous_keys(session: AsyncSession, email: str, tenant_id: str, now: float) -> int:
    """Move the live anonymous keys of ``email`` to ``tenant_id``; how many moved."""
    identity = await session.get(AnonymousIdentity, digest(email))
    if identity is None or identity.claimed_by is not None:
        return 0
    moved = await session.execute(
        update(ApiKey)
        .where(ApiKey.tenant_id == identity.tenant_id, repo.live(utc(now)))  # type: ignore[arg-type]
        .values(tenant_id=tenant_id, expires_at=None)
    )
    identity.claimed_by, identity.claimed_at = tenant_id, utc(now)
    return int(moved.rowcount or 0)  # type: ignore[attr-defined]
