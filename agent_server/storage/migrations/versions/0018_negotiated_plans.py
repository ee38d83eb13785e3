"""plans.self_serve and tenants.contract_ends_at: plans sold by negotiation are set by a platform
administrator with a contract end, never self-served (docs/billing.md, "Plans")

Revision ID: 0018_negotiated_plans
Revises: 0017_request_log
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018_negotiated_plans"
down_revision = "0017_request_log"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # False until the start's seed of the content pack says otherwise: a plan is never self-served by
    # accident between this migration and the seed.
    with op.batch_alter_table("plans") as batch:
        batch.add_column(sa.Column("self_serve", sa.Boolean(), nullable=False, server_default=sa.false()))
    # Tenants on a negotiated plan without a contract end are treated as unpaid once their trial ends,
    # like every other plan: a platform administrator sets the end (PATCH /admin/platform/tenants/{id}).
    with op.batch_alter_table("tenants") as batch:
        batch.add_column(sa.Column("contract_ends_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("tenants") as batch:
        batch.drop_column("contract_ends_at")
    with op.batch_alter_table("plans") as batch:
        batch.drop_column("self_serve")
