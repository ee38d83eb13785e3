"""Queueing mail: a row in the caller's own transaction, so a message exists exactly when the change
that caused it was committed (a registration and its verification mail commit together)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from agent_server.foundation.ids import new_id
from agent_server.foundation.secret_box import SecretBox
from agent_server.foundation.timeutil import utc
from agent_server.mail.tables import MAIL_PENDING, OutboxMail


@dataclass(frozen=True, slots=True)
class Mail:
    to: str
    subject: str
    text: str
    kind: str  # what the message is for: verify_email, password_reset, invite, version_reminder, ...


def enqueue(session: AsyncSession, box: SecretBox, mail: Mail, now: float) -> OutboxMail:
    """Add ``mail`` to the outbox in ``session``; the worker sends it after the commit."""
    row = OutboxMail(
        id=new_id("mail_"),
        kind=mail.kind,
        to_addr=mail.to,
        subject=mail.subject,
        body_encrypted=box.encrypt(mail.text),
        status=MAIL_PENDING,
        attempts=0,
        next_attempt_at=utc(now),
        created_at=utc(now),
    )
    session.add(row)
    return row
