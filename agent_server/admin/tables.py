"""Tables of the administration surface: audit log, connectors, playground traces, CSP reports, thresholds."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, Column, Text, UniqueConstraint
from sqlmodel import Field, SQLModel


class AuditRecord(SQLModel, table=True):
    __tablename__ = "audit_log"

    id: int | None = Field(default=None, primary_key=True)
    tenant_id: str | None = Field(default=None, max_length=64, index=True)
    actor: str = Field(max_length=200, description="user id, email or 'anonymous'")
    action: str = Field(max_length=100, index=True)
    target: str | None = Field(default=None, max_length=200)
    ip: str | None = Field(default=None, max_length=64)
    outcome: str = Field(default="ok", max_length=16, description="ok | denied | failed")
    details: dict = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    flagged: bool = False
    flag_reason: str | None = Field(default=None, max_length=200)
    at: datetime = Field(index=True)


class ConnectorRecord(SQLModel, table=True):
    """One tenant's configuration of a connector kind (office_suite, search_provider)."""

    __tablename__ = "connectors"
    __table_args__ = (UniqueConstraint("tenant_id", "kind", name="uq_connectors_tenant_kind"),)

    id: str = Field(primary_key=True, max_length=40)
    tenant_id: str = Field(max_length=64, index=True)
    kind: str = Field(max_length=40)
    managed: bool = False
    enabled: bool = True
    settings: dict = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    secret_encrypted: str | None = Field(default=None, sa_column=Column(Text))
    created_at: datetime
    updated_at: datetime


class ConnectorBindingRecord(SQLModel, table=True):
    """A per-user credential of a connector: an office-suite binding or a search-provider key."""

    __tablename__ = "connector_bindings"
    __table_args__ = (UniqueConstraint("tenant_id", "kind", "user_id", name="uq_connector_bindings_user"),)

    id: str = Field(primary_key=True, max_length=40)
    tenant_id: str = Field(max_length=64, index=True)
    kind: str = Field(max_length=40)
    user_id: str = Field(max_length=100)
    label: str = Field(default="", max_length=200)
    secret_encrypted: str = Field(sa_column=Column(Text, nullable=False))
    secret_hint: str = Field(max_length=16, description="last 4 characters, shown in lists")
    created_at: datetime
    rotated_at: datetime | None = None


class TraceRecord(SQLModel, table=True):
    __tablename__ = "playground_traces"

    id: str = Field(primary_key=True, max_length=40)
    tenant_id: str = Field(max_length=64, index=True)
    actor: str = Field(max_length=200)
    model: str = Field(max_length=200)
    backend: str | None = Field(default=None, max_length=100)
    status: str = Field(max_length=16, description="ok | error")
    latency_ms: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    steps: list = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    error: str | None = Field(default=None, max_length=500)
    created_at: datetime = Field(index=True)


class CspReportRecord(SQLModel, table=True):
    __tablename__ = "csp_reports"

    id: int | None = Field(default=None, primary_key=True)
    directive: str = Field(max_length=200, index=True)
    blocked_uri: str = Field(max_length=500)
    document_uri: str = Field(max_length=500)
    disposition: str = Field(default="enforce", max_length=16)
    ip: str | None = Field(default=None, max_length=64)
    body: dict = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    at: datetime = Field(index=True)


class UsageThresholdRecord(SQLModel, table=True):
    """A tenant's thresholds (percent of the plan's monthly token quota)."""

    __tablename__ = "usage_thresholds"

    tenant_id: str = Field(primary_key=True, max_length=64)
    percents: list = Field(sa_column=Column(JSON, nullable=False))
    updated_at: datetime


class UsageThresholdHitRecord(SQLModel, table=True):
    """A threshold already announced this month; the unique key makes the event fire once."""

    __tablename__ = "usage_threshold_hits"
    __table_args__ = (UniqueConstraint("tenant_id", "month", "percent", name="uq_usage_threshold_hits"),)

    id: int | None = Field(default=None, primary_key=True)
    tenant_id: str = Field(max_length=64)
    month: str = Field(max_length=7, description="YYYY-MM (UTC)")
    percent: int
    at: datetime
