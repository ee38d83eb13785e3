"""The mail outbox (migration 0008_mail_outbox): every message is a row before any request answers."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Column, Index, Text
from sqlmodel import Field, SQLModel

MAIL_PENDING, MAIL_SENT, MAIL_FAILED = "pending", "sent", "failed"


class OutboxMail(SQLModel, table=True):
    """One message. The body holds one-time links, so it is stored encrypted and erased once sent."""

    __tablename__ = "mail_outbox"
    __table_args__ = (Index("ix_mail_outbox_due", "status", "next_attempt_at"),)

    id: str = Field(primary_key=True, max_length=40)
    kind: str = Field(max_length=40, description="verify_email, password_reset, invite, ...")
    to_addr: str = Field(max_length=320)
    subject: str = Field(max_length=300)
    body_encrypted: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    status: str = Field(default=MAIL_PENDING, max_length=16)
    attempts: int = 0
    next_attempt_at: datetime
    lease_until: datetime | None = None
    lease_owner: str | None = Field(default=None, max_length=40)
    last_error: str | None = Field(default=None, max_length=300)
    created_at: datetime
    sent_at: datetime | None = None
