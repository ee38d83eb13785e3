"""api_keys.last_used_at: when a key last made a request, kept by the usage writer

Revision ID: 0013_key_last_used
Revises: 0012_keys_spend_byok
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013_key_last_used"
down_revision = "0012_keys_spend_byok"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("api_keys") as batch:
        batch.add_column(sa.Column("last_used_at", sa.DateTime(timezone=True), nullable=True))
    # Keys used before this migration get the time of their newest usage row: one grouped scan.
    bind = op.get_bind()
    latest = bind.execute(sa.text("SELECT key_id, max(created_at) FROM usage_records GROUP BY key_id")).all()
    if latest:
        bind.execute(
            sa.text("UPDATE api_keys SET last_used_at = :at WHERE id = :key"),
            [{"key": key, "at": at} for key, at in latest],
        )


def downgrade() -> None:
    with op.batch_alter_table("api_keys") as batch:
        batch.drop_column("last_used_at")
