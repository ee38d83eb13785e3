"""agentic commerce: agent platforms, ACP checkout sessions and their orders

Revision ID: 0023_agentic_commerce
Revises: 0019_members
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0023_agentic_commerce"
down_revision = "0019_members"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "acp_platforms",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("name", sa.String(200), nullable=False, unique=True),
        sa.Column("credential_digest", sa.String(64), nullable=False, unique=True),
        sa.Column("credential_hint", sa.String(16), nullable=False),
        sa.Column("webhook_url", sa.String(2048), nullable=True),
        sa.Column("signing_secret_encrypted", sa.Text(), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("revoked_at", TS, nullable=True),
    )
    op.create_table(
        "acp_checkout_sessions",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("platform_id", sa.String(40), nullable=False),
        sa.Column("status", sa.String(32), nullable=False),
        sa.Column("currency", sa.String(3), nullable=False),
        sa.Column("cart", sa.JSON(), nullable=False),
        sa.Column("order_id", sa.String(40), nullable=True),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("updated_at", TS, nullable=False),
        sa.Column("expires_at", TS, nullable=False),
    )
    op.create_index("ix_acp_checkout_sessions_platform_id", "acp_checkout_sessions", ["platform_id"])
    op.create_table(
        "acp_orders",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("checkout_session_id", sa.String(40), nullable=False, unique=True),
        sa.Column("platform_id", sa.String(40), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("currency", sa.String(3), nullable=False),
        sa.Column("amount_minor", sa.Integer(), nullable=False),
        sa.Column("payment_provider", sa.String(40), nullable=False),
        sa.Column("payment_ref", sa.String(200), nullable=False),
        sa.Column("email", sa.String(320), nullable=False),
        sa.Column("lines", sa.JSON(), nullable=False),
        sa.Column("refunded_minor", sa.Integer(), nullable=False),
        sa.Column("refund_ref", sa.String(200), nullable=True),
        sa.Column("refunded_at", TS, nullable=True),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("updated_at", TS, nullable=False),
    )
    op.create_index("ix_acp_orders_platform_id", "acp_orders", ["platform_id"])


def downgrade() -> None:
    op.drop_index("ix_acp_orders_platform_id", table_name="acp_orders")
    op.drop_table("acp_orders")
    op.drop_index("ix_acp_checkout_sessions_platform_id", table_name="acp_checkout_sessions")
    op.drop_table("acp_checkout_sessions")
    op.drop_table("acp_platforms")
