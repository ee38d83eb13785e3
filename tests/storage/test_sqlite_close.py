"""A SQLite connection's close() ends even when a forced stop was queued first or meanwhile (as
SQLAlchemy's termination of a cancelled query's connection does); aiosqlite's own waits for ever."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

import aiosqlite
import pytest
from sqlalchemy import text

from agent_server.foundation.settings import Settings
from agent_server.storage.db import Database
from agent_server.storage.sqlite_close import StopSafeConnection

Kind = Callable[[Callable[[], sqlite3.Connection], int], aiosqlite.Connection]


async def opened(kind: Kind, path: Path) -> aiosqlite.Connection:
    """A connection whose worker is busy for a moment (as under load): what is queued next waits."""
    connection = await kind(lambda: sqlite3.connect(path), 64)
    asyncio.get_running_loop().create_task(connection._execute(time.sleep, 0.3))
    await asyncio.sleep(0)  # the sleep is queued
    return connection


async def closes_in_time(
    connection: aiosqlite.Connection, close: asyncio.Task[None], seconds: float = 5
) -> bool:
    try:
        await asyncio.wait_for(asyncio.shield(close), seconds)
    except TimeoutError:
        return False
    await asyncio.to_thread(connection._thread.join, 3)
    return not connection._thread.is_alive()


async def stop_then_close(kind: Kind, path: Path) -> tuple[aiosqlite.Connection, asyncio.Task[None]]:
    connection = await opened(kind, path)
    connection.stop()  # SQLAlchemy's forced close
    return connection, asyncio.create_task(connection.close())


async def stop_during_close(kind: Kind, path: Path) -> tuple[aiosqlite.Connection, asyncio.Task[None]]:
    connection = await opened(kind, path)
    close = asyncio.create_task(connection.close())
    await asyncio.sleep(0)  # close() has queued its work and waits for it
    connection.stop()
    return connection, close


@pytest.mark.parametrize("order", [stop_then_close, stop_during_close])
async def test_close_ends_after_a_forced_stop(order: Callable, tmp_path: Path) -> None:
    connection, close = await order(StopSafeConnection, tmp_path / "db.sqlite")
    assert await closes_in_time(connection, close)
    assert close.exception() is None


@pytest.mark.parametrize("order", [stop_then_close, stop_during_close])
async def test_aiosqlite_alone_waits_for_ever(order: Callable, tmp_path: Path) -> None:
    """Why the class exists: if aiosqlite stops hanging here, it can go."""
    connection, close = await order(aiosqlite.Connection, tmp_path / "db.sqlite")
    assert not await closes_in_time(connection, close, seconds=0.5)  # a hang: no need to wait long
    close.cancel()


async def test_the_database_opens_its_sqlite_connections_stop_safe(settings: Settings) -> None:
    db = Database(settings)
    try:
        async with db.engine.connect() as connection:
            assert (await connection.execute(text("SELECT 1"))).scalar() == 1
            raw = await connection.get_raw_connection()
            assert type(raw.driver_connection) is StopSafeConnection
    finally:
        await db.dispose()
