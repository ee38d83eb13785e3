"""The mailer of an app: queues messages and runs the worker that sends them.

Built by ``create_app`` (through ``Accounts``), so a malformed ``AGENTGATE_SMTP_URL`` or
``AGENTGATE_MAIL_FROM`` stops the app at start with ``MailConfigError``, never at the first send.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from agent_server.foundation.clock import Clock
from agent_server.foundation.secret_box import SecretBox
from agent_server.foundation.settings import Settings
from agent_server.foundation.tasks import stop_tasks
from agent_server.mail.config import ehlo_name, parse_smtp_url, sender_address
from agent_server.mail.folder import FolderTransport
from agent_server.mail.outbox import Mail, enqueue
from agent_server.mail.smtp import SmtpTransport
from agent_server.mail.transport import Transport
from agent_server.mail.worker import MailWorker
from agent_server.storage.db import Database

log = logging.getLogger("agentgate.mail")
OUTBOX_FOLDER = "outbox"


def build_transport(settings: Settings) -> Transport:
    if settings.smtp_url is None:
        return FolderTransport(settings.data_dir / OUTBOX_FOLDER, log_links=settings.sandbox)
    config = parse_smtp_url(settings.smtp_url.get_secret_value())
    return SmtpTransport(config, ehlo_name=ehlo_name(settings), timeout=settings.mail_timeout_seconds)


class Mailer:
    def __init__(self, settings: Settings, db: Database, box: SecretBox, clock: Clock) -> None:
        self.settings, self.db, self.box, self.clock = settings, db, box, clock
        self.transport = build_transport(settings)
        self.worker = MailWorker(
            db,
            box,
            clock,
            self.transport,
            sender_address(settings),
            retry_hours=settings.mail_retry_hours,
            timeout=settings.mail_timeout_seconds,
        )

    async def send(self, mail: Mail) -> None:
        """Queue ``mail`` in a transaction of its own (use ``enqueue`` to share the caller's)."""
        async with self.db.session() as session:
            enqueue(session, self.box, mail, self.clock.now())
        self.wake()

    def wake(self) -> None:
        """After committing a transaction that used ``enqueue``: the worker sends without waiting for its poll."""
        self.worker.wake()

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Mailer]:
        """Lifespan step: run the worker (``AGENTGATE_MAIL_WORKER``) until shutdown."""
        tasks: list[asyncio.Task[None]] = []
        if self.settings.mail_worker:
            log.info("mail goes to %s", self.transport.describe())
            if self.settings.smtp_url is None and not self.settings.sandbox:
                log.warning("production mode without AGENTGATE_SMTP_URL: mail is only written to a folder")
            worker = self.worker.run(self.settings.mail_poll_seconds)
            tasks.append(asyncio.create_task(worker, name="mail-worker"))
        try:
            yield self
        finally:
            await stop_tasks(tasks)
