"""admin: webhooks, delivery queue and attempts, audit log, connectors, traces, CSP reports, thresholds

Revision ID: 0005_admin
Revises: 0001_foundation
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005_admin"
down_revision = "0001_foundation"
branch_labels = None
depends_on = None


def _id(length: int = 40) -> sa.Column:
    return sa.Column("id", sa.String(length), primary_key=True)


def _serial() -> sa.Column:
    return sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True)


def upgrade() -> None:
    op.create_table(
        "webhooks",
        _id(),
        sa.Column("tenant_id", sa.String(64), nullable=False, index=True),
        sa.Column("url", sa.String(2048), nullable=False),
        sa.Column("events", sa.JSON(), nullable=False),
        sa.Column("description", sa.String(200), nullable=False),
        sa.Column("secret_encrypted", sa.Text(), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("disabled_reason", sa.String(200), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_table(
        "webhook_deliveries",
        _id(),
        sa.Column("webhook_id", sa.String(40), nullable=False, index=True),
        sa.Column("tenant_id", sa.String(64), nullable=False, index=True),
        sa.Column("event_id", sa.String(40), nullable=False),
        sa.Column("event_type", sa.String(64), nullable=False),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("lease_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("lease_owner", sa.String(40), nullable=True),
        sa.Column("last_status_code", sa.Integer(), nullable=True),
        sa.Column("last_error", sa.String(300), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_index("ix_webhook_deliveries_due", "webhook_deliveries", ["status", "next_attempt_at"])
    op.create_table(
        "webhook_attempts",
        _serial(),
        sa.Column("delivery_id", sa.String(40), nullable=False, index=True),
        sa.Column("webhook_id", sa.String(40), nullable=False, index=True),
        sa.Column("tenant_id", sa.String(64), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("latency_ms", sa.Integer(), nullable=False),
        sa.Column("error", sa.String(300), nullable=True),
    )
    op.create_table(
        "audit_log",
        _serial(),
        sa.Column("tenant_id", sa.String(64), nullable=True, index=True),
        sa.Column("actor", sa.String(200), nullable=False),
        sa.Column("action", sa.String(100), nullable=False, index=True),
        sa.Column("target", sa.String(200), nullable=True),
        sa.Column("ip", sa.String(64), nullable=True),
        sa.Column("outcome", sa.String(16), nullable=False),
        sa.Column("details", sa.JSON(), nullable=False),
        sa.Column("flagged", sa.Boolean(), nullable=False),
        sa.Column("flag_reason", sa.String(200), nullable=True),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False, index=True),
    )
    op.create_table(
        "connectors",
        _id(),
        sa.Column("tenant_id", sa.String(64), nullable=False, index=True),
        sa.Column("kind", sa.String(40), nullable=False),
        sa.Column("managed", sa.Boolean(), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("settings", sa.JSON(), nullable=False),
        sa.Column("secret_encrypted", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("tenant_id", "kind", name="uq_connectors_tenant_kind"),
    )
    op.create_table(
        "connector_bindings",
        _id(),
        sa.Column("tenant_id", sa.String(64), nullable=False, index=True),
        sa.Column("kind", sa.String(40), nullable=False),
        sa.Column("user_id", sa.String(100), nullable=False),
        sa.Column("label", sa.String(200), nullable=False),
        sa.Column("secret_encrypted", sa.Text(), nullable=False),
        sa.Column("secret_hint", sa.String(16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("rotated_at", sa.DateTime(timezone=True), nullable=True),
        sa.UniqueConstraint("tenant_id", "kind", "user_id", name="uq_connector_bindings_user"),
    )
    op.create_table(
        "playground_traces",
        _id(),
        sa.Column("tenant_id", sa.String(64), nullable=False, index=True),
        sa.Column("actor", sa.String(200), nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("backend", sa.String(100), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("latency_ms", sa.Integer(), nullable=False),
        sa.Column("prompt_tokens", sa.Integer(), nullable=False),
        sa.Column("completion_tokens", sa.Integer(), nullable=False),
        sa.Column("steps", sa.JSON(), nullable=False),
        sa.Column("error", sa.String(500), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False, index=True),
    )
    op.create_table(
        "csp_reports",
        _serial(),
        sa.Column("directive", sa.String(200), nullable=False, index=True),
        sa.Column("blocked_uri", sa.String(500), nullable=False),
        sa.Column("document_uri", sa.String(500), nullable=False),
        sa.Column("disposition", sa.String(16), nullable=False),
        sa.Column("ip", sa.String(64), nullable=True),
        sa.Column("body", sa.JSON(), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False, index=True),
    )
    op.create_table(
        "usage_thresholds",
        sa.Column("tenant_id", sa.String(64), primary_key=True),
        sa.Column("percents", sa.JSON(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "usage_threshold_hits",
        _serial(),
        sa.Column("tenant_id", sa.String(64), nullable=False),
        sa.Column("month", sa.String(7), nullable=False),
        sa.Column("percent", sa.Integer(), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("tenant_id", "month", "percent", name="uq_usage_threshold_hits"),
    )


def downgrade() -> None:
    for table in (
        "usage_threshold_hits",
        "usage_thresholds",
        "csp_reports",
        "playground_traces",
        "connector_bindings",
        "connectors",
        "audit_log",
        "webhook_attempts",
        "webhook_deliveries",
        "webhooks",
    ):
        op.drop_table(table)
