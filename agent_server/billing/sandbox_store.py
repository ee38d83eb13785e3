"""The sandbox provider's objects, kept in ``billing_sandbox_objects`` so every process sees one sandbox.

An object is its Stripe-shaped JSON plus a kind, an optional unique lookup key (a price's lookup key,
an invoice item's idempotency key) and an owner (the customer), for listing.
"""

from __future__ import annotations

import secrets
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError

from agent_server.billing.tables import SandboxObject
from agent_server.foundation.clock import Clock
from agent_server.foundation.timeutil import utc
from agent_server.storage.db import Database

PREFIXES = {
    "customer": "cus_sbx_",
    "price": "price_sbx_",
    "checkout_session": "cs_sbx_",
    "portal_session": "bps_sbx_",
    "subscription": "sub_sbx_",
    "invoice": "in_sbx_",
    "invoiceitem": "ii_sbx_",
    "payment_method": "pm_sbx_",
    "payment_intent": "pi_sbx_",
    "event": "evt_sbx_",
}


def new_id(kind: str) -> str:
    return PREFIXES[kind] + secrets.token_hex(12)


class SandboxStore:
    def __init__(self, db: Database, clock: Clock) -> None:
        self.db, self.clock = db, clock

    async def add(
        self, kind: str, data: dict[str, Any], *, lookup: str | None = None, owner: str | None = None
    ) -> tuple[dict[str, Any], bool]:
        """Store a new object (``data`` gets ``id``, ``object`` and ``created``); with a ``lookup`` key
        that exists already, the stored object instead, and False."""
        object_id = data.get("id") or new_id(kind)
        now = int(self.clock.now())
        data = {"id": object_id, "object": kind, "created": now, "livemode": False, **data}
        row = SandboxObject(
            id=object_id, kind=kind, lookup=lookup, owner=owner, data=data, created=now, updated_at=utc(now)
        )
        try:
            async with self.db.session() as session:
                session.add(row)
        except IntegrityError:
            if lookup is None:
                raise
            existing = await self.find(kind, lookup)
            if existing is None:
                raise
            return existing, False
        return data, True

    async def get(self, kind: str, object_id: str) -> dict[str, Any] | None:
        async with self.db.session() as session:
            row = await session.get(SandboxObject, object_id)
        return dict(row.data) if row is not None and row.kind == kind else None

    async def find(self, kind: str, lookup: str) -> dict[str, Any] | None:
        async with self.db.session() as session:
            row = await session.scalar(
                select(SandboxObject).where(SandboxObject.kind == kind, SandboxObject.lookup == lookup)
            )
        return dict(row.data) if row is not None else None

    async def save(
        self, data: dict[str, Any], *, lookup: str | None = None, keep_lookup: bool = True
    ) -> None:
        """Write an object back whole (the last writer wins: the sandbox has one payer at a time)."""
        values: dict[str, Any] = {"data": data, "updated_at": utc(self.clock.now())}
        if not keep_lookup:
            values["lookup"] = lookup
        async with self.db.session() as session:
            await session.execute(
                update(SandboxObject).where(SandboxObject.id == data["id"]).values(**values)
            )

    async def owned(self, kind: str, owner: str, limit: int = 100) -> list[dict[str, Any]]:
        """The owner's objects of a kind, newest first."""
        async with self.db.session() as session:
            rows = await session.scalars(
                select(SandboxObject)
                .where(SandboxObject.kind == kind, SandboxObject.owner == owner)
                .order_by(SandboxObject.created.desc(), SandboxObject.id.desc())  # type: ignore[union-attr,attr-defined]
                .limit(limit)
            )
            return [dict(row.data) for row in rows]

    async def of_kind(self, kind: str, limit: int = 1000) -> list[dict[str, Any]]:
        async with self.db.session() as session:
            rows = await session.scalars(select(SandboxObject).where(SandboxObject.kind == kind).limit(limit))
            return [dict(row.data) for row in rows]
