"""The stored Responses API answers in the database, per tenant, for a retention in days.

A row lives ``AGENTGATE_RESPONSES_RETENTION_DAYS`` from its creation: reads treat it as gone from
then on, and ``purge`` (a step of the job worker's housekeeping, with the expired jobs and
idempotency records) deletes it. Saving a response whose id the tenant already stored replaces
it (an upstream may reuse ids); another tenant's rows are never read, replaced or deleted.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from pydantic_core import from_json, to_json
from sqlalchemy import delete
from sqlmodel import col

from agent_server.capabilities.services import Services
from agent_server.foundation.clock import Clock
from agent_server.foundation.timeutil import utc
from agent_server.gateway.response_tables import StoredResponse
from agent_server.gateway.tables import unix
from agent_server.storage.db import Database


class Stored:
    """A stored response, its JSON read once: the response object and the conversation's items."""

    __slots__ = ("input_items", "model", "response")

    def __init__(self, row: StoredResponse) -> None:
        self.model = row.model
        self.response: dict[str, Any] = from_json(row.response)
        self.input_items: list[dict[str, Any]] = from_json(row.input_items)


class ResponseStore:
    def __init__(self, db: Database, clock: Clock, retention_days: int) -> None:
        self.db, self.clock, self.retention = db, clock, timedelta(days=retention_days)

    @classmethod
    def of(cls, services: Services) -> ResponseStore:
        return cls(services.db, services.clock, services.settings.responses_retention_days)

    async def save(
        self, tenant_id: str, key_id: str, response: dict[str, Any], items: list[dict[str, Any]]
    ) -> None:
        now = utc(self.clock.now())
        row = StoredResponse(
            tenant_id=tenant_id,
            id=str(response["id"]),
            key_id=key_id,
            model=str(response.get("model") or ""),
            created_at=now,
            expires_at=now + self.retention,
            response=to_json(response).decode(),
            input_items=to_json(items).decode(),
        )
        async with self.db.session() as session:
            await session.merge(row)  # one transaction: a reused id replaces the earlier row

    async def get(self, tenant_id: str, response_id: str) -> Stored | None:
        async with self.db.session() as session:
            row = await session.get(StoredResponse, (tenant_id, response_id))
        if row is None or unix(row.expires_at) <= self.clock.now():
            return None
        return Stored(row)

    async def delete(self, tenant_id: str, response_id: str) -> bool:
        now = utc(self.clock.now())
        async with self.db.session() as session:
            result = await session.execute(
                delete(StoredResponse).where(
                    col(StoredResponse.tenant_id) == tenant_id,
                    col(StoredResponse.id) == response_id,
                    col(StoredResponse.expires_at) > now,
                )
            )
        return bool(getattr(result, "rowcount", 0))

    async def purge(self) -> int:
        """Delete expired rows (they already read as gone); returns how many."""
        async with self.db.session() as session:
            result = await session.execute(
                delete(StoredResponse).where(col(StoredResponse.expires_at) <= utc(self.clock.now()))
            )
        return int(getattr(result, "rowcount", 0) or 0)
