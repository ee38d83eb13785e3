"""accounts: pending registrations, one-time e-mail links, sessions, SSO connections and domains

Revision ID: 0007_accounts
Revises: 0002_gateway
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007_accounts"
down_revision = "0002_gateway"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    # Batch mode: SQLite cannot drop NOT NULL in place, so Alembic copies the table there.
    with op.batch_alter_table("users") as users:
        users.alter_column("password_hash", existing_type=sa.String(200), nullable=True)
        users.add_column(sa.Column("email_verified_at", TS, nullable=True))
        users.add_column(sa.Column("token_version", sa.Integer(), nullable=False, server_default="0"))
    with op.batch_alter_table("tenants") as tenants:
        tenants.add_column(sa.Column("sso_enforced", sa.Boolean(), nullable=False, server_default=sa.false()))
    op.create_table(
        "registrations",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("email", sa.String(320), nullable=False),
        sa.Column("organisation", sa.String(200), nullable=False),
        sa.Column("plan_id", sa.String(40), nullable=False),
        sa.Column("method", sa.String(16), nullable=False),
        sa.Column("password_hash", sa.String(200), nullable=True),
        sa.Column("passkey", sa.JSON(), nullable=True),
        sa.Column("token_digest", sa.String(64), nullable=True, unique=True),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("expires_at", TS, nullable=False),
        sa.Column("used_at", TS, nullable=True),
    )
    op.create_index("ix_registrations_email", "registrations", ["email"])
    op.create_table(
        "email_tokens",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("user_id", sa.String(40), sa.ForeignKey("users.id"), nullable=False),
        sa.Column("purpose", sa.String(20), nullable=False),
        sa.Column("digest", sa.String(64), nullable=False, unique=True),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("expires_at", TS, nullable=False),
        sa.Column("used_at", TS, nullable=True),
    )
    op.create_index("ix_email_tokens_user_id", "email_tokens", ["user_id"])
    op.create_table(
        "sso_connections",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("tenant_id", sa.String(40), sa.ForeignKey("tenants.id"), nullable=False),
        sa.Column("protocol", sa.String(8), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("config", sa.JSON(), nullable=False),
        sa.Column("secret", sa.String(), nullable=True),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("updated_at", TS, nullable=False),
        sa.UniqueConstraint("tenant_id", "protocol", name="ux_sso_connections_tenant_protocol"),
    )
    op.create_index("ix_sso_connections_tenant_id", "sso_connections", ["tenant_id"])
    op.create_table(
        "tenant_domains",
        sa.Column("domain", sa.String(253), primary_key=True),
        sa.Column("tenant_id", sa.String(40), sa.ForeignKey("tenants.id"), nullable=False),
        sa.Column("verification_token", sa.String(64), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("verified_at", TS, nullable=True),
    )
    op.create_index("ix_tenant_domains_tenant_id", "tenant_domains", ["tenant_id"])


def downgrade() -> None:
    op.drop_table("tenant_domains")
    op.drop_table("sso_connections")
    op.drop_table("email_tokens")
    op.drop_table("registrations")
    with op.batch_alter_table("tenants") as tenants:
        tenants.drop_column("sso_enforced")
    with op.batch_alter_table("users") as users:
        users.drop_column("token_version")
        users.drop_column("email_verified_at")
        users.alter_column("password_hash", existing_type=sa.String(200), nullable=False)
