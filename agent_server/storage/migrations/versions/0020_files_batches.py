"""files, file_chunks (the database file store), batches and batch_results

Revision ID: 0020_files_batches
Revises: 0019_members
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0020_files_batches"
down_revision = "0019_members"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "files",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("tenant_id", sa.String(40), nullable=False),
        sa.Column("purpose", sa.String(16), nullable=False),
        sa.Column("filename", sa.String(255), nullable=False),
        sa.Column("bytes", sa.Integer(), nullable=False),
        sa.Column("store", sa.String(16), nullable=False),
        sa.Column("lines", sa.Integer(), nullable=True),
        sa.Column("endpoint", sa.String(40), nullable=True),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("expires_at", TS, nullable=False),
    )
    op.create_index("ix_files_tenant_time", "files", ["tenant_id", "created_at", "id"])
    op.create_index("ix_files_expires_at", "files", ["expires_at"])
    op.create_table(
        "file_chunks",
        sa.Column("file_id", sa.String(40), primary_key=True),
        sa.Column("seq", sa.Integer(), primary_key=True),
        sa.Column("data", sa.LargeBinary(), nullable=False),
    )
    op.create_table(
        "batches",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("tenant_id", sa.String(40), nullable=False),
        sa.Column("key_id", sa.String(40), nullable=False),
        sa.Column("key_digest", sa.String(64), nullable=False),
        sa.Column("endpoint", sa.String(40), nullable=False),
        sa.Column("input_file_id", sa.String(40), nullable=False),
        sa.Column("completion_window", sa.String(8), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("batch_metadata", sa.JSON(none_as_null=True), nullable=True),
        sa.Column("total", sa.Integer(), nullable=False),
        sa.Column("completed", sa.Integer(), nullable=False),
        sa.Column("failed", sa.Integer(), nullable=False),
        sa.Column("discount_percent", sa.Integer(), nullable=False),
        sa.Column("output_file_id", sa.String(40), nullable=True),
        sa.Column("error_file_id", sa.String(40), nullable=True),
        sa.Column("errors", sa.JSON(none_as_null=True), nullable=True),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("expires_at", TS, nullable=False),
        sa.Column("heartbeat_at", TS, nullable=True),
        *(
            sa.Column(f"{moment}_at", TS, nullable=True)
            for moment in (
                "in_progress",
                "finalizing",
                "completed",
                "failed",
                "expired",
                "cancelling",
                "cancelled",
            )
        ),
    )
    op.create_index("ix_batches_tenant_id", "batches", ["tenant_id"])
    op.create_table(
        "batch_results",
        sa.Column("batch_id", sa.String(40), primary_key=True),
        sa.Column("line", sa.Integer(), primary_key=True),
        sa.Column("custom_id", sa.String(512), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=False),
        sa.Column("request_id", sa.String(64), nullable=False),
        sa.Column("body", sa.JSON(none_as_null=True), nullable=True),
        sa.Column("error", sa.JSON(none_as_null=True), nullable=True),
    )


def downgrade() -> None:
    for table in ("batch_results", "batches", "file_chunks", "files"):
        op.drop_table(table)
