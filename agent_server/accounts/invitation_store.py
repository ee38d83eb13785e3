"""Invitation rows: their state, their public view, and the one step that uses one up.

Shared by the invitation service (``invitations.py``) and single sign-on's just-in-time users
(``sso/provision.py``), which honours a pending invitation's role.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from agent_server.accounts import links
from agent_server.accounts.tables import Invitation
from agent_server.foundation.timeutil import iso, utc

PENDING, ACCEPTED, REVOKED, EXPIRED = "pending", "accepted", "revoked", "expired"


def _aware(value: datetime) -> datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=utc(0).tzinfo)


def state_of(invitation: Invitation, now: float) -> str:
    if invitation.accepted_at is not None:
        return ACCEPTED
    if invitation.revoked_at is not None:
        return REVOKED
    return EXPIRED if _aware(invitation.expires_at) <= utc(now) else PENDING


def view(invitation: Invitation, now: float) -> dict[str, Any]:
    """An invitation as the admin API shows it (never the link or its digest)."""
    return {
        "object": "invitation",
        "id": invitation.id,
        "email": invitation.email,
        "role": invitation.role,
        "state": state_of(invitation, now),
        "invited_by": invitation.invited_by,
        "created_at": iso(invitation.created_at),
        "sent_at": iso(invitation.sent_at),
        "sends": invitation.sends,
        "expires_at": iso(invitation.expires_at),
        "accepted_at": iso(invitation.accepted_at) if invitation.accepted_at else None,
        "accepted_by": invitation.accepted_by,
        "revoked_at": iso(invitation.revoked_at) if invitation.revoked_at else None,
    }


async def by_token(session: AsyncSession, token: str) -> Invitation | None:
    query = select(Invitation).where(Invitation.digest == links.digest(token))
    return (await session.execute(query)).scalars().first()


def _pending(now: float) -> list[Any]:
    return [
        Invitation.accepted_at.is_(None),  # type: ignore[union-attr]
        Invitation.revoked_at.is_(None),  # type: ignore[union-attr]
        Invitation.expires_at > utc(now),  # type: ignore[operator]
    ]


async def pending_for(session: AsyncSession, tenant_id: str, email: str, now: float) -> Invitation | None:
    """The newest pending invitation of ``email`` to the tenant."""
    query = (
        select(Invitation)
        .where(Invitation.tenant_id == tenant_id, Invitation.email == email, *_pending(now))
        .order_by(Invitation.created_at.desc())  # type: ignore[attr-defined]
    )
    return (await session.execute(query)).scalars().first()


async def claim(session: AsyncSession, invitation: Invitation, user_id: str, now: float) -> bool:
    """Use the invitation up for ``user_id`` (compare-and-set: it works once, while pending)."""
    used = await session.execute(
        update(Invitation)
        .where(Invitation.id == invitation.id, *_pending(now))  # type: ignore[arg-type]
        .values(accepted_at=utc(now), accepted_by=user_id)
    )
    return bool(used.rowcount == 1)  # type: ignore[attr-defined]
