"""The mail worker: claims due outbox rows with a lease, sends each, retries with backoff, erases bodies.

``tick()`` is one pass (tests call it after moving a ManualClock); ``run()`` loops it in the app's
lifespan and wakes early on ``wake()``. A claim is a compare-and-set UPDATE (``WHERE status='pending'
AND next_attempt_at <= now AND (lease_until IS NULL OR lease_until < now)``), so several processes
never send one message twice; a process that dies mid-send loses its lease after ``lease_seconds``
and another one sends the message again (at-least-once; its Message-ID stays the same).
Once a message is sent or given up, its body is erased: the one-time links in it do not stay at rest.
"""

from __future__ import annotations

import asyncio
import logging
import random
import secrets
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage

from sqlalchemy import or_, select, update

from agent_server.foundation.clock import Clock
from agent_server.foundation.errors import AgentError
from agent_server.foundation.secret_box import SecretBox
from agent_server.foundation.tasks import wait_for_event
from agent_server.foundation.timeutil import utc
from agent_server.mail.message import compose
from agent_server.mail.tables import MAIL_FAILED, MAIL_PENDING, MAIL_SENT, OutboxMail
from agent_server.mail.transport import DeliveryFailed, Transport
from agent_server.observability.instruments import INSTRUMENTS
from agent_server.storage.db import Database

log = logging.getLogger("agentgate.mail")
M = OutboxMail
# Seconds after the 1st, 2nd, ... failed attempt; hourly afterwards, until retry_hours have passed.
SCHEDULE = (5, 30, 120, 600, 1800)
HOURLY = 3600
JITTER = 0.1  # +-10 %: spreads the retries of many messages that failed together (a server outage)


def backoff(failed_attempts: int, rng: random.Random) -> float:
    base = SCHEDULE[failed_attempts - 1] if failed_attempts <= len(SCHEDULE) else HOURLY
    return base * rng.uniform(1 - JITTER, 1 + JITTER)


def _aware(value: datetime) -> datetime:
    return value if value.tzinfo else value.replace(tzinfo=UTC)  # SQLite keeps no offset


class MailWorker:
    def __init__(
        self,
        db: Database,
        box: SecretBox,
        clock: Clock,
        transport: Transport,
        sender: str,
        *,
        retry_hours: float,
        timeout: float,
        batch: int = 5,
        rng: random.Random | None = None,
    ) -> None:
        self.db, self.box, self.clock, self.transport, self.sender = db, box, clock, transport, sender
        self.retry_window, self.batch = retry_hours * 3600, batch
        # Long enough for every SMTP step of one message to hit its timeout (the batch runs at once).
        self.lease_seconds = 60 + 10 * timeout
        self.rng = rng or random.Random()
        self.worker_id = "mwk_" + secrets.token_hex(8)
        self._wake = asyncio.Event()

    def wake(self) -> None:
        """Called after a commit that queued mail, so it goes out without waiting for the next poll."""
        self._wake.set()

    async def run(self, poll_seconds: float) -> None:
        while True:
            self._wake.clear()  # before the tick, so a message queued during it is not missed
            try:
                busy = await self.tick()
            except Exception:  # a database hiccup must not end the worker
                log.exception("mail worker tick failed")
                busy = 0
            if not busy:
                await wait_for_event(self._wake, poll_seconds)

    async def tick(self) -> int:
        """Claim due messages and attempt each once; returns how many were attempted."""
        claimed = await self._claim()
        await asyncio.gather(*(self._attempt(row) for row in claimed))
        return len(claimed)

    async def _claim(self) -> list[OutboxMail]:
        now = utc(self.clock.now())
        due = (
            M.status == MAIL_PENDING,
            M.next_attempt_at <= now,
            or_(M.lease_until.is_(None), M.lease_until < now),  # type: ignore[union-attr,operator]
        )
        lease = now + timedelta(seconds=self.lease_seconds)
        async with self.db.session() as session:
            # One order for every worker, so two claiming at once take row locks in the same order.
            query = select(M.id).where(*due).order_by(M.next_attempt_at, M.id).limit(self.batch)
            claimed = []
            for mail_id in list((await session.execute(query)).scalars()):
                won = await session.execute(
                    update(M)
                    .where(M.id == mail_id, *due)  # type: ignore[arg-type]
                    .values(lease_until=lease, lease_owner=self.worker_id)
                )
                if won.rowcount == 1:
                    claimed.append(mail_id)
            if not claimed:
                return []
            rows = await session.execute(
                select(M).where(M.id.in_(claimed)).execution_options(populate_existing=True)  # type: ignore[attr-defined]
            )
            return list(rows.scalars())

    async def _attempt(self, row: OutboxMail) -> None:
        try:
            await self.transport.deliver(row.id, self._message(row))
        except DeliveryFailed as failure:
            await self._record(row, failure)
        except Exception as exc:  # a bug must cost one attempt, not the lease of the whole batch
            log.exception("mail %s: unexpected error while sending", row.id)
            await self._record(row, DeliveryFailed(f"unexpected error: {type(exc).__name__}"))
        else:
            await self._record(row, None)

    def _message(self, row: OutboxMail) -> EmailMessage:
        if row.body_encrypted is None:
            raise DeliveryFailed("the message body is gone", permanent=True)
        try:
            text = self.box.decrypt(row.body_encrypted)
        except AgentError as exc:  # a key only another host has: that host can still send it
            raise DeliveryFailed(exc.message) from None
        try:
            return compose(
                mail_id=row.id,
                sender=self.sender,
                to=row.to_addr,
                subject=row.subject,
                text=text,
                created_at=row.created_at,
            )
        except ValueError as exc:
            raise DeliveryFailed(f"cannot be written as a message: {exc}", permanent=True) from None

    async def _record(self, row: OutboxMail, failure: DeliveryFailed | None) -> None:
        now = self.clock.now()
        number = row.attempts + 1
        values: dict[str, object] = {"attempts": number, "lease_until": None, "lease_owner": None}
        if failure is None:
            values.update(status=MAIL_SENT, sent_at=utc(now), body_encrypted=None, last_error=None)
            outcome = "sent"
        else:
            next_at = utc(now + backoff(number, self.rng))
            deadline = _aware(row.created_at) + timedelta(seconds=self.retry_window)
            values["last_error"] = failure.reason
            if failure.permanent or next_at > deadline:
                values.update(status=MAIL_FAILED, body_encrypted=None)
                outcome = f"failed for good: {failure.reason}"
            else:
                values.update(next_attempt_at=next_at)
                outcome = f"failed, next attempt at {next_at:%Y-%m-%d %H:%M:%S}Z: {failure.reason}"
        async with self.db.session() as session:
            await session.execute(
                update(M)
                .where(M.id == row.id, M.lease_owner == self.worker_id)  # type: ignore[arg-type]
                .values(**values)
            )
        level = logging.INFO if failure is None else logging.WARNING
        log.log(level, "mail %s (%s) attempt %d %s", row.id, row.kind, number, outcome)
        INSTRUMENTS.count_mail(str(values.get("status", "retrying")))  # sent, failed or retrying
