"""Batch records and line results in the database; each status change is one conditional UPDATE.

``record_results`` inserts a slice's line results with ON CONFLICT DO NOTHING and moves the counts by
the rows it really inserted (RETURNING), in one transaction: a line is counted once, whichever
worker records it and however often.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import or_, update
from sqlmodel import col, select

from agent_server.batches.lines import Outcome
from agent_server.batches.tables import FINAL, BatchRecord, BatchResult
from agent_server.foundation.clock import Clock
from agent_server.foundation.timeutil import utc
from agent_server.storage.db import Database

RESULTS = BatchResult.__table__  # type: ignore[attr-defined]
PAGE = 500


class BatchStore:
    def __init__(self, db: Database, clock: Clock) -> None:
        self.db, self.clock = db, clock

    def now(self) -> datetime:
        return utc(self.clock.now())

    async def add(self, record: BatchRecord) -> None:
        async with self.db.session() as session:
            session.add(record)

    async def find(self, batch_id: str) -> BatchRecord | None:
        async with self.db.session() as session:
            return await session.get(BatchRecord, batch_id)

    async def move(self, batch_id: str, sources: Sequence[str], target: str, **values: Any) -> bool:
        """sources -> target, stamping ``<target>_at``; False when the batch was in no source status."""
        statement = (
            update(BatchRecord)
            .where(col(BatchRecord.id) == batch_id, col(BatchRecord.status).in_(sources))
            .values(status=target, **{f"{target}_at": self.now()}, **values)
        )
        async with self.db.session() as session:
            result = await session.execute(statement)
        return getattr(result, "rowcount", 0) == 1

    async def beat(self, batch_id: str) -> None:
        """A slice is alive (the stall sweep leaves the batch alone)."""
        statement = update(BatchRecord).where(col(BatchRecord.id) == batch_id).values(heartbeat_at=self.now())
        async with self.db.session() as session:
            await session.execute(statement)

    async def stalled(self, seconds: float) -> list[str]:
        """Unfinished batches without a beat for ``seconds``, each beaten now (so one sweep of many
        processes takes each): their ids."""
        since = self.now() - timedelta(seconds=seconds)
        quiet = (
            col(BatchRecord.status).not_in(FINAL),
            or_(col(BatchRecord.heartbeat_at) < since, col(BatchRecord.heartbeat_at).is_(None)),
            col(BatchRecord.created_at) < since,
        )
        taken = []
        async with self.db.session() as session:
            ids = list((await session.execute(select(BatchRecord.id).where(*quiet).limit(100))).scalars())
            for batch_id in ids:
                claim = update(BatchRecord).where(col(BatchRecord.id) == batch_id, *quiet)
                result = await session.execute(claim.values(heartbeat_at=self.now()))
                if getattr(result, "rowcount", 0) == 1:
                    taken.append(batch_id)
        return taken

    async def page(self, tenant_id: str, after: str | None, limit: int) -> tuple[list[BatchRecord], bool]:
        """Newest first; ``after`` is the last id of the previous page."""
        query = select(BatchRecord).where(col(BatchRecord.tenant_id) == tenant_id)
        if after:
            cursor = await self.find(after)
            if cursor is not None and cursor.tenant_id == tenant_id:
                created, ident = col(BatchRecord.created_at), col(BatchRecord.id)
                query = query.where(
                    (created < cursor.created_at) | ((created == cursor.created_at) & (ident < cursor.id))
                )
        query = query.order_by(col(BatchRecord.created_at).desc(), col(BatchRecord.id).desc())
        async with self.db.session() as session:
            rows = list((await session.execute(query.limit(limit + 1))).scalars())
        return rows[:limit], len(rows) > limit

    async def done_lines(self, batch_id: str) -> set[int]:
        async with self.db.session() as session:
            rows = await session.execute(
                select(BatchResult.line).where(col(BatchResult.batch_id) == batch_id)
            )
        return set(rows.scalars())

    async def record_results(self, batch_id: str, outcomes: list[Outcome]) -> None:
        if not outcomes:
            return
        values = [
            {
                "batch_id": batch_id,
                "line": o.line,
                "custom_id": o.custom_id,
                "status_code": o.status_code,
                "request_id": o.request_id,
                "body": o.body,
                "error": None,
            }
            for o in outcomes
        ]
        # One multi-row INSERT: RETURNING gives a row for each line inserted, none for one already there.
        statement = _insert_once(self.db.engine.dialect.name).values(values).returning(RESULTS.c.status_code)
        async with self.db.engine.begin() as conn:
            inserted = list((await conn.execute(statement)).scalars())
            completed = sum(1 for status in inserted if status == 200)
            failed = len(inserted) - completed
            if inserted:
                await conn.execute(
                    update(BatchRecord)
                    .where(col(BatchRecord.id) == batch_id)
                    .values(
                        completed=col(BatchRecord.completed) + completed,
                        failed=col(BatchRecord.failed) + failed,
                    )
                )

    async def results(self, batch_id: str) -> AsyncIterator[BatchResult]:
        """Every recorded line in line order, a page per query."""
        last = 0
        while True:
            query = (
                select(BatchResult)
                .where(col(BatchResult.batch_id) == batch_id, col(BatchResult.line) > last)
                .order_by(col(BatchResult.line))
                .limit(PAGE)
            )
            async with self.db.session() as session:
                rows = list((await session.execute(query)).scalars())
            for row in rows:
                yield row
            if len(rows) < PAGE:
                return
            last = rows[-1].line


def _insert_once(dialect: str) -> Any:
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as dialect_insert
    else:
        from sqlalchemy.dialects.sqlite import insert as dialect_insert
    return dialect_insert(RESULTS).on_conflict_do_nothing(index_elements=["batch_id", "line"])
