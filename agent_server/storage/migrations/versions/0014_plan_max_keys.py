"""plans.max_keys: how many active API keys a tenant of the plan may hold (null: no limit)

Revision ID: 0014_plan_max_keys
Revises: 0013_key_last_used
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014_plan_max_keys"
down_revision = "0013_key_last_used"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Filled from plans.yaml by the seed at every start; until then no plan limits keys.
    with op.batch_alter_table("plans") as batch:
        batch.add_column(sa.Column("max_keys", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("plans") as batch:
        batch.drop_column("max_keys")
