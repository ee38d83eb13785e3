"""The deprecation reminders already queued (migration 0010_usage_api_version).

One row per version, milestone and tenant, inserted in the transaction that queues the mails: the
primary key lets exactly one process queue them, however many run the reminder job.
"""

from __future__ import annotations

from datetime import datetime

from sqlmodel import Field, SQLModel


class VersionReminder(SQLModel, table=True):
    __tablename__ = "version_reminders"

    version: str = Field(primary_key=True, max_length=24)
    milestone: str = Field(primary_key=True, max_length=16, description="month_6 or final")
    tenant_id: str = Field(primary_key=True, foreign_key="tenants.id", max_length=40)
    sent_at: datetime = Field(description="When the mails were queued (the outbox sends them).")
