"""The request log: usage_records' request columns and indexes, request_bodies, api_keys.log_bodies_days

Revision ID: 0017_request_log
Revises: 0015_stored_responses
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017_request_log"
down_revision = "0015_stored_responses"
branch_labels = None
depends_on = None

ROW_COLUMNS = ("request_id", "model_served", "upstream", "error_code", "ttft_ms", "trace_id")
# Each starts with the tenant and ends with the log's order (created_at, id): docs/request-log.md.
INDEXES = {
    "ix_usage_records_tenant_time": ["tenant_id", "created_at", "id"],
    "ix_usage_records_tenant_key_time": ["tenant_id", "key_id", "created_at", "id"],
    "ix_usage_records_tenant_model_time": ["tenant_id", "model", "created_at", "id"],
    "ix_usage_records_tenant_endpoint_time": ["tenant_id", "endpoint", "created_at", "id"],
    "ix_usage_records_tenant_class_time": ["tenant_id", sa.text("(status / 100)"), "created_at", "id"],
    "ix_usage_records_tenant_request": ["tenant_id", "request_id"],
}


def upgrade() -> None:
    # Nullable: rows written before this migration have no request id, served model or the like.
    with op.batch_alter_table("usage_records") as batch:
        batch.add_column(sa.Column("request_id", sa.String(128), nullable=True))
        batch.add_column(sa.Column("model_served", sa.String(200), nullable=True))
        batch.add_column(sa.Column("upstream", sa.String(100), nullable=True))
        batch.add_column(sa.Column("error_code", sa.String(64), nullable=True))
        batch.add_column(sa.Column("ttft_ms", sa.Float(), nullable=True))
        batch.add_column(sa.Column("trace_id", sa.String(40), nullable=True))
    # (tenant_id, created_at, id) serves everything (tenant_id, created_at) did, and the log's order.
    op.drop_index("ix_usage_records_tenant_created", table_name="usage_records")
    for name, columns in INDEXES.items():
        op.create_index(name, "usage_records", columns)
    with op.batch_alter_table("api_keys") as batch:
        batch.add_column(sa.Column("log_bodies_days", sa.Integer(), nullable=True))
    op.create_table(
        "request_bodies",
        sa.Column("row_token", sa.String(32), primary_key=True),
        sa.Column("tenant_id", sa.String(40), nullable=False),
        sa.Column("request", sa.Text(), nullable=True),
        sa.Column("response", sa.Text(), nullable=True),
        sa.Column("truncated", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_request_bodies_expires", "request_bodies", ["expires_at"])


def downgrade() -> None:
    op.drop_index("ix_request_bodies_expires", table_name="request_bodies")
    op.drop_table("request_bodies")
    with op.batch_alter_table("api_keys") as batch:
        batch.drop_column("log_bodies_days")
    for name in INDEXES:
        op.drop_index(name, table_name="usage_records")
    op.create_index("ix_usage_records_tenant_created", "usage_records", ["tenant_id", "created_at"])
    with op.batch_alter_table("usage_records") as batch:
        for column in ROW_COLUMNS:
            batch.drop_column(column)
