"""usage: a unique row token, so usage rows drained from Redis are stored exactly once

Revision ID: 0006_usage_row_token
Revises: 0002_gateway
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006_usage_row_token"
down_revision = "0002_gateway"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Nullable: rows written straight from the process (no Redis) have no token; NULLs never clash.
    op.add_column("usage_records", sa.Column("row_token", sa.String(32), nullable=True))
    op.create_index("ux_usage_records_row_token", "usage_records", ["row_token"], unique=True)


def downgrade() -> None:
    op.drop_index("ux_usage_records_row_token", table_name="usage_records")
    op.drop_column("usage_records", "row_token")
