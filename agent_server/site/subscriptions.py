"""Newsletter and waitlist subscriptions: one row per (e-mail, list); subscribing twice is a no-op."""

from __future__ import annotations

import secrets
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, EmailStr, Field
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select

from agent_server.clock import Clock
from agent_server.site.tables import SubscriptionRecord
from agent_server.storage.db import Database
from agent_server.timeutil import iso, utc

ListName = Literal["newsletter", "waitlist"]


class SubscribeBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    email: EmailStr
    list: ListName = Field(default="newsletter", description="newsletter | waitlist")
    name: str | None = Field(default=None, max_length=200)


def subscription_view(sub: SubscriptionRecord) -> dict[str, Any]:
    return {
        "subscription_id": sub.id,
        "email": sub.email,
        "list": sub.list,
        "status": sub.status,
        "created_at": iso(sub.created_at),
    }


class Subscriptions:
    def __init__(self, db: Database, clock: Clock) -> None:
        self.db, self.clock = db, clock

    async def _find(self, email: str, list_name: str) -> SubscriptionRecord | None:
        async with self.db.session() as session:
            rows = await session.execute(
                select(SubscriptionRecord).where(
                    col(SubscriptionRecord.email) == email, col(SubscriptionRecord.list) == list_name
                )
            )
            return rows.scalars().first()

    async def subscribe(self, body: SubscribeBody) -> tuple[SubscriptionRecord, bool]:
        """The subscription and whether this call created it."""
        email = str(body.email).lower()  # one subscriber per mailbox, whatever the spelling
        existing = await self._find(email, body.list)
        if existing is not None:
            return existing, False
        record = SubscriptionRecord(
            id=f"sub_{secrets.token_hex(12)}",
            email=email,
            list=body.list,
            name=body.name,
            status="active",
            created_at=utc(self.clock.now()),
        )
        try:
            async with self.db.session() as session:
                session.add(record)
        except IntegrityError:  # a concurrent first subscription won the unique constraint
            winner = await self._find(email, body.list)
            if winner is None:
                raise
            return winner, False
        return record, True
