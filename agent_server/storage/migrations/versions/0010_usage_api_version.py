"""usage: the API version of each row; version_reminders: the deprecation mails already queued

Revision ID: 0010_usage_api_version
Revises: 0006_usage_row_token
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010_usage_api_version"
down_revision = "0006_usage_row_token"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Nullable: rows written before this migration do not know their version. No index: one would
    # nearly double the cost of each usage insert on SQLite; the reminder job reads rows by id.
    op.add_column("usage_records", sa.Column("api_version", sa.String(24), nullable=True))
    op.create_table(
        "version_reminders",
        sa.Column("version", sa.String(24), primary_key=True),
        sa.Column("milestone", sa.String(16), primary_key=True),
        sa.Column("tenant_id", sa.String(40), sa.ForeignKey("tenants.id"), primary_key=True),
        sa.Column("sent_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("version_reminders")
    op.drop_column("usage_records", "api_version")
