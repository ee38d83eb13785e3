"""SQLite connections whose ``close()`` cannot wait for ever.

aiosqlite runs each connection in a worker thread that ends at the first stop request. When
SQLAlchemy terminates a connection (a query's task was cancelled), it can ask for both: a forced
``stop()`` and a graceful ``close()`` of the same connection. aiosqlite's ``close()`` then queues its
work behind the stop, where no thread will ever take it, and awaits it: the task never ends, and
whatever waits for every task (uvicorn's exit, an event loop's shutdown) waits for ever. It was
seen once in the test suite: a test's event loop hung in its shutdown on two such tasks.

Here ``close()`` queues nothing once a stop is queued: that stop closes the SQLite connection itself.
"""

from __future__ import annotations

from typing import Any

import aiosqlite


class StopSafeConnection(aiosqlite.Connection):
    async def close(self) -> None:
        if self._connection is None or not self._running:  # closed, or a stop already queued
            return
        try:
            await self._execute(self._conn.close)
        finally:
            self._connection = None
            if self._running:  # no stop was queued meanwhile (a forced one would already end the thread)
                stopped = self.stop()
                if stopped is not None:
                    await stopped


def make_close_stop_safe(dbapi_connection: Any) -> None:
    """For the engine's ``connect`` event: SQLAlchemy's adapter holds the aiosqlite connection."""
    driver = dbapi_connection._connection  # AsyncAdapt_aiosqlite_connection's driver connection
    if type(driver) is aiosqlite.Connection:
        driver.__class__ = StopSafeConnection
