"""Database access for passkeys; every query of a user's credentials names the user.

A passkey of another user is answered exactly like a missing one (404), as API keys are.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from agent_server.accounts.passkey_tables import PasskeyCredential
from agent_server.foundation.errors import Conflict, NotFound
from agent_server.gateway.tables import User
from agent_server.storage.db import Database


async def by_credential_id(db: Database, credential_id: str) -> PasskeyCredential | None:
    query = select(PasskeyCredential).where(PasskeyCredential.credential_id == credential_id)
    async with db.session() as session:
        return (await session.execute(query)).scalars().first()


async def for_user(db: Database, user_id: str) -> list[PasskeyCredential]:
    query = (
        select(PasskeyCredential)
        .where(PasskeyCredential.user_id == user_id)
        .order_by(PasskeyCredential.created_at, PasskeyCredential.id)  # type: ignore[arg-type]
    )
    async with db.session() as session:
        return list((await session.execute(query)).scalars())


async def for_email(db: Database, email: str) -> list[PasskeyCredential]:
    """The passkeys of the user with ``email``; one query whether or not the user exists."""
    query = (
        select(PasskeyCredential)
        .join(User, User.id == PasskeyCredential.user_id)  # type: ignore[arg-type]
        .where(User.email == email.strip().lower())
        .order_by(PasskeyCredential.created_at, PasskeyCredential.id)  # type: ignore[arg-type]
    )
    async with db.session() as session:
        return list((await session.execute(query)).scalars())


async def add(db: Database, row: PasskeyCredential) -> PasskeyCredential:
    async with db.session() as session:
        session.add(row)
        try:
            await session.flush()
        except IntegrityError:
            raise Conflict(
                "This passkey is already registered.", code="passkey_already_registered", param="credential"
            ) from None
    return row


async def _owned(session: AsyncSession, user_id: str, passkey_id: str) -> PasskeyCredential:
    row = await session.get(PasskeyCredential, passkey_id)
    if row is None or row.user_id != user_id:
        raise NotFound(f"No passkey with id '{passkey_id}'.", code="passkey_not_found", param="id")
    return row


async def rename(db: Database, user_id: str, passkey_id: str, name: str) -> PasskeyCredential:
    async with db.session() as session:
        row = await _owned(session, user_id, passkey_id)
        row.name = name
    return row


async def remove(db: Database, user_id: str, passkey_id: str) -> None:
    async with db.session() as session:
        await _owned(session, user_id, passkey_id)
        await session.execute(delete(PasskeyCredential).where(PasskeyCredential.id == passkey_id))  # type: ignore[arg-type]


async def record_use(
    db: Database, row: PasskeyCredential, new_count: int, backed_up: bool, at: datetime
) -> bool:
    """Move the counter from the value the check used; False when another sign-in moved it first."""
    query = (
        update(PasskeyCredential)
        .where(PasskeyCredential.id == row.id, PasskeyCredential.sign_count == row.sign_count)  # type: ignore[arg-type]
        .values(sign_count=new_count, backed_up=backed_up, last_used_at=at)
    )
    async with db.session() as session:
        return (await session.execute(query)).rowcount == 1  # type: ignore[attr-defined]
