"""discovery_call_requests (leads) and the newsletter's double opt-in on subscriptions

Revision ID: 0022_leads_and_opt_in
Revises: 0003_site
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0022_leads_and_opt_in"
down_revision = "0003_site"  # the site branch, whose subscriptions table it alters
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "discovery_call_requests",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("email", sa.String(320), nullable=False),
        sa.Column("company", sa.String(200), nullable=True),
        sa.Column("topic", sa.String(200), nullable=False),
        sa.Column("language", sa.String(8), nullable=False),
        sa.Column("preferred_times", sa.String(300), nullable=True),
        sa.Column("message", sa.String(2000), nullable=True),
        sa.Column("source", sa.String(16), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_discovery_call_requests_status", "discovery_call_requests", ["status"])
    op.create_index("ix_discovery_call_requests_created_at", "discovery_call_requests", ["created_at"])
    # Subscriptions made before this migration were active at once; they stay active.
    with op.batch_alter_table("subscriptions") as batch:
        batch.add_column(sa.Column("confirm_digest", sa.String(64), nullable=True))
        batch.add_column(sa.Column("confirm_expires_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("confirmed_at", sa.DateTime(timezone=True), nullable=True))
        batch.create_unique_constraint("uq_subscriptions_confirm_digest", ["confirm_digest"])


def downgrade() -> None:
    with op.batch_alter_table("subscriptions") as batch:
        batch.drop_constraint("uq_subscriptions_confirm_digest", type_="unique")
        batch.drop_column("confirmed_at")
        batch.drop_column("confirm_expires_at")
        batch.drop_column("confirm_digest")
    op.drop_index("ix_discovery_call_requests_created_at", table_name="discovery_call_requests")
    op.drop_index("ix_discovery_call_requests_status", table_name="discovery_call_requests")
    op.drop_table("discovery_call_requests")
