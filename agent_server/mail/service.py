"""The mailer of an app: queues messages and runs the worker that sends them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from agent_server.admin.crypto import SecretBox
from agent_server.clock import Clock
from agent_server.mail.outbox import Mail, enqueue
from agent_server.settings import Settings
from agent_server.storage.db import Database


class Mailer:
    def __init__(self, settings: Settings, db: Database, box: SecretBox, clock: Clock) -> None:
        self.settings, self.db, self.box, self.clock = settings, db, box, clock

    async def send(self, mail: Mail) -> None:
        """Queue ``mail`` in a transaction of its own (use ``enqueue`` to share the caller's)."""
        async with self.db.session() as session:
            enqueue(session, self.box, mail, self.clock.now())

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Mailer]:
        yield self
