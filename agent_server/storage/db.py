"""The relational database: one async engine (SQLite by default, PostgreSQL in production)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import event, text
from sqlalchemy.engine import Engine
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine

from agent_server.foundation.settings import Settings
from agent_server.storage.sqlite_close import make_close_stop_safe

# Timestamps are stored as UTC wall time; pin the session time zone so the server's setting cannot shift them.
POSTGRES_CONNECT_ARGS = {"connect_timeout": 3, "options": "-c timezone=UTC"}


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    # WAL lets readers run beside the writer; NORMAL sync survives a killed process. A 512 KiB page
    # cache per connection (SQLite's default is 2 MiB): the pool grows under load, and the embedded
    # database's hot pages stay in the OS cache anyway.
    cursor = dbapi_connection.cursor()
    pragmas = (
        "journal_mode=WAL",
        "synchronous=NORMAL",
        "foreign_keys=ON",
        "busy_timeout=5000",
        "cache_size=-512",
    )
    for pragma in pragmas:
        cursor.execute(f"PRAGMA {pragma}")
    cursor.close()


def prepare_sqlite_dir(url: str) -> None:
    if url.startswith("sqlite") and ":memory:" not in url:
        Path(url.split(":///", 1)[1]).parent.mkdir(parents=True, exist_ok=True)


def install_sqlite_pragmas(engine: Engine) -> None:
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)


class Database:
    """Owns the engine; sessions are opened per unit of work and committed at its end."""

    def __init__(self, settings: Settings) -> None:
        url = settings.async_database_url
        prepare_sqlite_dir(url)
        # hide_parameters: an error's log line never shows the values (password hashes, digests, e-mails).
        options: dict[str, Any] = {"pool_pre_ping": True, "hide_parameters": True}
        if url.startswith("postgresql"):
            options.update(pool_size=10, max_overflow=10, pool_timeout=5, connect_args=POSTGRES_CONNECT_ARGS)
        self.engine: AsyncEngine = create_async_engine(url, **options)
        install_sqlite_pragmas(self.engine.sync_engine)
        if self.engine.dialect.name == "sqlite":
            event.listen(self.engine.sync_engine, "connect", lambda conn, _record: make_close_stop_safe(conn))
        self._sessions = async_sessionmaker(self.engine, expire_on_commit=False)

    @asynccontextmanager
    async def session(self) -> AsyncIterator[AsyncSession]:
        """A session committed when the block ends normally and rolled back otherwise."""
        async with self._sessions() as session:
            try:
                yield session
                await session.commit()
            except BaseException:
                await session.rollback()
                raise

    async def ping(self) -> bool:
        async with self.engine.connect() as conn:
            await conn.execute(text("SELECT 1"))
        return True

    async def dispose(self) -> None:
        await self.engine.dispose()
