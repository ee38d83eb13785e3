"""Reading and writing the routing table (agent_server/llm/tables.py) in one transaction each."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

from sqlalchemy import delete, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from agent_server.foundation.settings_llm import RouteEntry
from agent_server.llm.routing import RoutingTable, same_routes
from agent_server.llm.tables import STATE_ROW_ID, LLMRouteRecord, LLMRoutingState
from agent_server.storage.db import Database

log = logging.getLogger("agentgate.llm")


async def read_revision(db: Database) -> int | None:
    """The cheap check every process runs at most once per second."""
    async with db.session() as session:
        result = await session.execute(
            select(LLMRoutingState.revision).where(LLMRoutingState.id == STATE_ROW_ID)
        )
        return result.scalar_one_or_none()


async def _state(session: AsyncSession) -> LLMRoutingState | None:
    result = await session.execute(select(LLMRoutingState).where(LLMRoutingState.id == STATE_ROW_ID))
    return result.scalar_one_or_none()


async def _rows(session: AsyncSession) -> dict[str, list[RouteEntry]]:
    result = await session.execute(
        select(LLMRouteRecord).order_by(LLMRouteRecord.model, LLMRouteRecord.position)
    )
    routes: dict[str, list[RouteEntry]] = {}
    for row in result.scalars():
        entry = RouteEntry(backend=row.backend, weight=row.weight, priority=row.priority)
        routes.setdefault(row.model, []).append(entry)
    return routes


async def read_table(db: Database) -> RoutingTable | None:
    """The stored table, or None before the first write."""
    async with db.session() as session:
        state = await _state(session)
        if state is None:
            return None
        return RoutingTable.build(state.revision, await _rows(session))


async def write_table(db: Database, routes: Mapping[str, Sequence[RouteEntry]], source: str = "admin") -> int:
    """Replace every row and bump the revision in one transaction; returns the new revision.

    The UPDATE comes first so that on PostgreSQL it locks the state row and two concurrent writers
    serialise instead of both writing the same revision.
    """
    now = datetime.now(UTC)
    async with db.session() as session:
        bumped = await session.execute(
            update(LLMRoutingState)
            .where(LLMRoutingState.id == STATE_ROW_ID)
            .values(revision=LLMRoutingState.revision + 1, updated_at=now, source=source)
        )
        if bumped.rowcount == 0:
            session.add(LLMRoutingState(id=STATE_ROW_ID, revision=1, updated_at=now, source=source))
            await session.flush()
        revision = (await _state(session)).revision  # type: ignore[union-attr]
        await replace_rows(session, routes, revision)
    return revision


async def replace_rows(
    session: AsyncSession, routes: Mapping[str, Sequence[RouteEntry]], revision: int
) -> None:
    """Swap every route row for ``routes`` inside the caller's transaction."""
    await session.execute(delete(LLMRouteRecord))
    for model, entries in routes.items():
        for position, entry in enumerate(entries):
            session.add(
                LLMRouteRecord(
                    model=model,
                    position=position,
                    backend=entry.backend,
                    weight=entry.weight,
                    priority=entry.priority,
                    revision=revision,
                )
            )


async def ensure_seeded(db: Database, seed: Mapping[str, Sequence[RouteEntry]]) -> RoutingTable:
    """Write the settings' table when none is stored, or when the stored one still comes from
    settings and differs from them (so a new upstream in settings takes effect on restart, while
    a table edited by an admin is never overwritten). Returns the table now stored."""
    async with db.session() as session:
        state = await _state(session)
        stored = await _rows(session) if state is not None else None
    if state is not None and (state.source != "settings" or same_routes(stored or {}, seed)):
        return RoutingTable.build(state.revision, stored or {})
    try:
        revision = await write_table(db, seed, source="settings")
        log.info("llm routing table seeded from settings: %d models, revision %d", len(seed), revision)
    except IntegrityError:
        # Another process seeded at the same moment; its table is as good as ours.
        log.info("llm routing table seeded by another process")
    table = await read_table(db)
    return table if table is not None else RoutingTable.build(0, seed)
