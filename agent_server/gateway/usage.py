"""Usage records, written in batches off the hot path, and the per-tenant summary.

A request only appends a small row to a list (no I/O, no task). A background task started by the
lifespan inserts the list in one statement every ``interval`` seconds, or sooner once ``batch``
rows wait, and flushes the rest at shutdown. The list is bounded: if the database cannot keep up,
rows beyond ``max_pending`` are dropped and counted rather than growing memory without end.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any, NamedTuple

from sqlalchemy import case, func, insert, select

from agent_server.gateway.plans import utcnow
from agent_server.gateway.tables import UsageRecord
from agent_server.storage.db import Database

log = logging.getLogger("agentgate.usage")


class UsageRow(NamedTuple):
    """One request's record. A tuple: built on every request, and ``_asdict`` copies nothing (unlike
    ``dataclasses.asdict``, which deep-copies every field and cost more than the request itself)."""

    tenant_id: str
    key_id: str
    model: str
    endpoint: str
    prompt_tokens: int
    completion_tokens: int
    latency_ms: float
    status: int
    backend: str
    stream: bool
    created_at: float  # clock reading; turned into a datetime at flush, off the request path


class UsageWriter:
    def __init__(
        self, db: Database, *, interval: float = 0.5, batch: int = 500, max_pending: int = 50_000
    ) -> None:
        self._db, self.interval, self.batch, self.max_pending = db, interval, batch, max_pending
        self._pending: list[UsageRow] = []
        self._wake: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._lock: asyncio.Lock | None = None
        self._stopping = False
        self.dropped = 0

    def record(self, row: UsageRow) -> None:
        if len(self._pending) >= self.max_pending:
            self.dropped += 1
            return
        self._pending.append(row)
        if len(self._pending) >= self.batch and self._wake is not None:
            self._wake.set()

    async def start(self) -> None:
        self._wake, self._lock, self._stopping = asyncio.Event(), asyncio.Lock(), False
        self._task = asyncio.create_task(self._run(), name="usage-writer")

    async def stop(self) -> None:
        # Ask the loop to finish rather than cancelling it: a cancel could land in the middle of an
        # insert and leave the driver's operation running after the engine is gone.
        if self._task is not None and self._wake is not None:
            self._stopping = True
            self._wake.set()
            await self._task
            self._task = None
        await self.flush()

    async def _run(self) -> None:
        assert self._wake is not None
        while not self._stopping:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.interval)
            self._wake.clear()
            try:
                await self.flush()
            except Exception:
                log.exception("usage flush failed; %d rows wait for the next try", len(self._pending))

    async def flush(self) -> int:
        """Write every waiting row now; returns how many were written."""
        lock = self._lock or asyncio.Lock()
        async with lock:
            rows, self._pending = self._pending, []
            if not rows:
                return 0
            values = [{**row._asdict(), "created_at": utcnow(row.created_at)} for row in rows]
            try:
                async with self._db.session() as session:
                    await session.execute(insert(UsageRecord), values)
            except Exception:
                # Put them back (bounded) so a short database outage loses nothing.
                room = max(0, self.max_pending - len(self._pending))
                self.dropped += max(0, len(rows) - room)
                self._pending[:0] = rows[:room]
                raise
            return len(rows)


async def summarise(db: Database, tenant_id: str) -> list[dict[str, Any]]:
    """Requests, tokens, errors and mean latency per key and model of one tenant."""
    table = UsageRecord.__table__.c  # type: ignore[attr-defined]
    query = (
        select(
            table.key_id,
            table.model,
            func.count().label("requests"),
            func.coalesce(func.sum(table.prompt_tokens), 0).label("prompt_tokens"),
            func.coalesce(func.sum(table.completion_tokens), 0).label("completion_tokens"),
            func.sum(case((table.status >= 400, 1), else_=0)).label("errors"),
            func.avg(table.latency_ms).label("avg_latency_ms"),
        )
        .where(table.tenant_id == tenant_id)
        .group_by(table.key_id, table.model)
        .order_by(table.key_id, table.model)
    )
    async with db.session() as session:
        rows = (await session.execute(query)).all()
    return [
        {
            "key_id": row.key_id,
            "model": row.model,
            "requests": int(row.requests),
            "prompt_tokens": int(row.prompt_tokens),
            "completion_tokens": int(row.completion_tokens),
            "total_tokens": int(row.prompt_tokens) + int(row.completion_tokens),
            "errors": int(row.errors or 0),
            "avg_latency_ms": round(float(row.avg_latency_ms or 0.0), 2),
        }
        for row in rows
    ]
