"""agent sign-in: anonymous agents' tenants by e-mail digest, identity assertions used once
(docs/oauth.md)

Revision ID: 0021_oauth
Revises: 0019_members
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0021_oauth"
down_revision = "0019_members"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "anonymous_identities",
        sa.Column("email_digest", sa.String(64), primary_key=True),
        sa.Column("tenant_id", sa.String(40), sa.ForeignKey("tenants.id"), nullable=False, unique=True),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("claimed_by", sa.String(40), sa.ForeignKey("tenants.id"), nullable=True),
        sa.Column("claimed_at", TS, nullable=True),
    )
    op.create_table(
        "agent_assertions",
        sa.Column("digest", sa.String(64), primary_key=True),
        sa.Column("expires_at", TS, nullable=False),
    )
    op.create_index("ix_agent_assertions_expires_at", "agent_assertions", ["expires_at"])


def downgrade() -> None:
    op.drop_index("ix_agent_assertions_expires_at", table_name="agent_assertions")
    op.drop_table("agent_assertions")
    op.drop_table("anonymous_identities")
