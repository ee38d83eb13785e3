"""Members of an organisation: roles, removal, leaving, ownership (docs/accounts.md, "Members and roles").

Rules, in one place for the JSON routes and the dashboard alike:

- only an owner touches owners: makes someone an owner, changes or removes an owner (403
  ``owner_required``); ownership is otherwise given by ``transfer`` (owner only, by the policy);
- the last owner can neither leave, nor be removed, nor lose the role (409 ``last_owner``);
- a member who leaves or is removed keeps their account but has no organisation any more, and every
  session of theirs ends at once (the token version is raised).

Every change locks the tenant's row first, so two owners demoting each other at once cannot leave the
organisation without one (the second waits and then sees the first's change).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from agent_server.accounts.roles import ADMIN, OWNER, checked_role, permissions_with
from agent_server.foundation.clock import Clock
from agent_server.foundation.errors import Conflict, NotFound, PermissionDenied
from agent_server.foundation.timeutil import iso
from agent_server.gateway.tables import Tenant, User
from agent_server.storage.db import Database


@dataclass(frozen=True, slots=True)
class Acting:
    """Who asks: a member of ``tenant_id`` with ``role`` (as the session check read it)."""

    user_id: str
    tenant_id: str
    role: str | None


def member_view(user: User, acting: Acting | None = None) -> dict[str, Any]:
    return {
        "object": "member",
        "id": user.id,
        "email": user.email,
        "role": user.role,
        "created_at": iso(user.created_at),
        "email_verified": user.email_verified_at is not None,
        "you": acting is not None and acting.user_id == user.id,
    }


class Members:
    def __init__(self, db: Database, clock: Clock) -> None:
        self.db, self.clock = db, clock

    async def list(self, tenant_id: str) -> list[User]:
        query = select(User).where(User.tenant_id == tenant_id).order_by(User.created_at, User.id)  # type: ignore[arg-type]
        async with self.db.session() as session:
            return list((await session.execute(query)).scalars())

    async def get(self, tenant_id: str, user_id: str) -> User:
        async with self.db.session() as session:
            return await _member(session, tenant_id, user_id)

    async def membership(self, user_id: str) -> dict[str, Any]:
        """A person's own membership as they see it: their organisation and role, or none."""
        async with self.db.session() as session:
            user = await session.get(User, user_id)
            tenant = await session.get(Tenant, user.tenant_id) if user and user.tenant_id else None
        if user is None:
            raise NotFound("This account no longer exists.", param="user")
        return {
            "object": "membership",
            "user_id": user.id,
            "email": user.email,
            "tenant_id": tenant.id if tenant else None,
            "organisation": tenant.name if tenant else None,
            "role": user.role if tenant else None,
        }

    async def change_role(self, acting: Acting, user_id: str, role: str) -> tuple[User, str | None]:
        """(the member, their previous role)."""
        role = checked_role(role)
        async with self.db.session() as session:
            await lock_tenant(session, acting.tenant_id)
            user = await _member(session, acting.tenant_id, user_id)
            previous = user.role
            _owner_rule(acting, OWNER in (previous, role))
            await _keep_an_owner(session, user, role)
            user.role, user.permissions = role, permissions_with(user.permissions, role)
        return user, previous

    async def remove(self, acting: Acting, user_id: str) -> User:
        """Remove a member (yourself too: that is leaving); their sessions end."""
        async with self.db.session() as session:
            await lock_tenant(session, acting.tenant_id)
            user = await _member(session, acting.tenant_id, user_id)
            if user.id != acting.user_id:
                _owner_rule(acting, user.role == OWNER)
            await _keep_an_owner(session, user, None)
            await _detach(session, user)
        return user

    async def leave(self, acting: Acting) -> User:
        if not acting.tenant_id:
            raise Conflict("You are not a member of an organisation.", code="no_organisation")
        return await self.remove(acting, acting.user_id)

    async def transfer(self, acting: Acting, user_id: str) -> tuple[User, User]:
        """Make ``user_id`` an owner and the acting owner an admin, in one step: (new owner, previous)."""
        if acting.role != OWNER:
            raise PermissionDenied("Only an owner can hand ownership over.", code="owner_required")
        if user_id == acting.user_id:
            raise Conflict("You are an owner already; choose another member.", code="transfer_to_self")
        async with self.db.session() as session:
            await lock_tenant(session, acting.tenant_id)
            successor = await _member(session, acting.tenant_id, user_id)
            previous = await _member(session, acting.tenant_id, acting.user_id)
            if previous.role != OWNER:  # demoted a moment ago by another owner
                raise PermissionDenied("Only an owner can hand ownership over.", code="owner_required")
            successor.role, successor.permissions = OWNER, permissions_with(successor.permissions, OWNER)
            previous.role, previous.permissions = ADMIN, permissions_with(previous.permissions, ADMIN)
        return successor, previous


async def lock_tenant(session: AsyncSession, tenant_id: str) -> None:
    """Take the tenant's row for the rest of the transaction (PostgreSQL: a row lock; SQLite: the
    write lock), so membership changes of one organisation run one after another."""
    await session.execute(update(Tenant).where(Tenant.id == tenant_id).values(name=Tenant.name))  # type: ignore[arg-type]


async def _member(session: AsyncSession, tenant_id: str, user_id: str) -> User:
    user = await session.get(User, user_id)
    if user is None or not tenant_id or user.tenant_id != tenant_id:
        raise NotFound(f"No member {user_id} in this organisation.", param="user_id")
    return user


def _owner_rule(acting: Acting, touches_an_owner: bool) -> None:
    if touches_an_owner and acting.role != OWNER:
        raise PermissionDenied(
            "Only an owner can make someone an owner, or change or remove an owner.", code="owner_required"
        )


async def _keep_an_owner(session: AsyncSession, user: User, new_role: str | None) -> None:
    """409 when ``user`` is the organisation's only owner and would stop being one."""
    if user.role != OWNER or new_role == OWNER:
        return
    others = await session.scalar(
        select(func.count())
        .select_from(User)
        .where(User.tenant_id == user.tenant_id, User.role == OWNER, User.id != user.id)  # type: ignore[arg-type]
    )
    if not others:
        raise Conflict(
            "This is the organisation's only owner: make another member an owner (or hand ownership "
            "over) first.",
            code="last_owner",
        )


async def _detach(session: AsyncSession, user: User) -> None:
    """The user leaves the organisation: no tenant, no role, every session ended."""
    await session.execute(
        update(User)
        .where(User.id == user.id)  # type: ignore[arg-type]
        .values(
            tenant_id=None,
            role=None,
            permissions=permissions_with(user.permissions, None),
            token_version=User.token_version + 1,
        )
    )
