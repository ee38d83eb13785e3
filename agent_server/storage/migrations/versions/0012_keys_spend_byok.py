"""api_keys: model allow-list, budget, expiry, metadata; usage_records: cost; byok_keys

Revision ID: 0012_keys_spend_byok
Revises: 0010_usage_api_version
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012_keys_spend_byok"
down_revision = "0010_usage_api_version"
branch_labels = None
depends_on = None

KEY_COLUMNS = ("models", "budget_period", "budget_tokens", "budget_spend", "expires_at", "key_metadata")


def upgrade() -> None:
    # Every new column is nullable: existing keys keep working exactly as before, and usage rows
    # written before this migration have no cost (null, not a made-up zero).
    with op.batch_alter_table("api_keys") as batch:
        batch.add_column(sa.Column("models", sa.JSON(none_as_null=True), nullable=True))
        batch.add_column(sa.Column("budget_period", sa.String(8), nullable=True))
        batch.add_column(sa.Column("budget_tokens", sa.BigInteger(), nullable=True))
        batch.add_column(sa.Column("budget_spend", sa.BigInteger(), nullable=True))
        batch.add_column(sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("key_metadata", sa.JSON(none_as_null=True), nullable=True))
    op.add_column("usage_records", sa.Column("cost_micros", sa.BigInteger(), nullable=True))
    op.add_column("usage_records", sa.Column("currency", sa.String(3), nullable=True))
    op.create_table(
        "byok_keys",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("tenant_id", sa.String(40), sa.ForeignKey("tenants.id"), nullable=False),
        sa.Column("provider", sa.String(100), nullable=False),
        sa.Column("secret_encrypted", sa.Text(), nullable=False),
        sa.Column("hint", sa.String(16), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("tenant_id", "provider", name="ux_byok_keys_tenant_provider"),
    )


def downgrade() -> None:
    op.drop_table("byok_keys")
    op.drop_column("usage_records", "currency")
    op.drop_column("usage_records", "cost_micros")
    with op.batch_alter_table("api_keys") as batch:
        for column in KEY_COLUMNS:
            batch.drop_column(column)
