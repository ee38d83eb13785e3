"""Webhook endpoints, the durable delivery queue and its per-attempt log.

Also imports the administration tables (audit, connectors, traces, CSP reports, usage thresholds),
so ``agent_server/storage/tables.py`` needs one line for everything of the admin surface.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, Column, Index, Text
from sqlmodel import Field, SQLModel

from agent_server.admin import tables as admin_tables  # noqa: F401

DELIVERY_PENDING, DELIVERY_DELIVERED, DELIVERY_FAILED = "pending", "delivered", "failed"


class WebhookRecord(SQLModel, table=True):
    __tablename__ = "webhooks"

    id: str = Field(primary_key=True, max_length=40)
    tenant_id: str = Field(max_length=64, index=True)
    url: str = Field(max_length=2048)
    events: list = Field(sa_column=Column(JSON, nullable=False))
    description: str = Field(default="", max_length=200)
    secret_encrypted: str = Field(sa_column=Column(Text, nullable=False))
    enabled: bool = True
    disabled_reason: str | None = Field(default=None, max_length=200)
    created_at: datetime
    deleted_at: datetime | None = None


class WebhookDeliveryRecord(SQLModel, table=True):
    """One event for one endpoint. ``payload`` holds the exact bytes that are signed and sent."""

    __tablename__ = "webhook_deliveries"
    __table_args__ = (Index("ix_webhook_deliveries_due", "status", "next_attempt_at"),)

    id: str = Field(primary_key=True, max_length=40)
    webhook_id: str = Field(max_length=40, index=True)
    tenant_id: str = Field(max_length=64, index=True)
    event_id: str = Field(max_length=40, description="the payload id and the webhook-id header")
    event_type: str = Field(max_length=64)
    payload: str = Field(sa_column=Column(Text, nullable=False))
    status: str = Field(default=DELIVERY_PENDING, max_length=16)
    attempts: int = 0
    next_attempt_at: datetime
    lease_until: datetime | None = None
    lease_owner: str | None = Field(default=None, max_length=40)
    last_status_code: int | None = None
    last_error: str | None = Field(default=None, max_length=300)
    created_at: datetime
    finished_at: datetime | None = None


class WebhookAttemptRecord(SQLModel, table=True):
    __tablename__ = "webhook_attempts"

    id: int | None = Field(default=None, primary_key=True)
    delivery_id: str = Field(max_length=40, index=True)
    webhook_id: str = Field(max_length=40, index=True)
    tenant_id: str = Field(max_length=64)
    attempt: int
    at: datetime
    status_code: int | None = None
    latency_ms: int
    error: str | None = Field(default=None, max_length=300)
