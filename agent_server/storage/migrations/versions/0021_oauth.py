"""agent sign-in: anonymous agents' tenants by e-mail digest, identity assertions used once; the
OAuth authorization server's clients, codes, tokens and consents (docs/oauth.md)

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
    op.create_table(
        "oauth_clients",
        sa.Column("client_id", sa.String(2000), primary_key=True),
        sa.Column("client_name", sa.String(200), nullable=False),
        sa.Column("redirect_uris", sa.JSON(), nullable=False),
        sa.Column("token_endpoint_auth_method", sa.String(32), nullable=False),
        sa.Column("grant_types", sa.JSON(), nullable=False),
        sa.Column("scope", sa.String(200), nullable=False),
        sa.Column("secret_digest", sa.String(64), nullable=True),
        sa.Column("created_at", TS, nullable=False),
    )
    op.create_table(
        "oauth_codes",
        sa.Column("digest", sa.String(64), primary_key=True),
        sa.Column("client_id", sa.String(2000), nullable=False, index=True),
        sa.Column("user_id", sa.String(40), nullable=False),
        sa.Column("tenant_id", sa.String(40), nullable=False),
        sa.Column("redirect_uri", sa.String(2000), nullable=False),
        sa.Column("scope", sa.String(200), nullable=False),
        sa.Column("resource", sa.String(2000), nullable=False),
        sa.Column("code_challenge", sa.String(128), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("expires_at", TS, nullable=False),
        sa.Column("used_at", TS, nullable=True),
    )
    op.create_table(
        "oauth_tokens",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("family_id", sa.String(64), nullable=False, index=True),
        sa.Column("client_id", sa.String(2000), nullable=False, index=True),
        sa.Column("user_id", sa.String(40), nullable=False),
        sa.Column("tenant_id", sa.String(40), nullable=False, index=True),
        sa.Column("scope", sa.String(200), nullable=False),
        sa.Column("resource", sa.String(2000), nullable=False),
        sa.Column("access_digest", sa.String(64), nullable=False, unique=True),
        sa.Column("refresh_digest", sa.String(64), nullable=True, unique=True),
        sa.Column("access_expires_at", TS, nullable=False),
        sa.Column("refresh_expires_at", TS, nullable=True),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("rotated_at", TS, nullable=True),
        sa.Column("revoked_at", TS, nullable=True),
    )
    op.create_table(
        "oauth_consents",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("user_id", sa.String(40), nullable=False),
        sa.Column("tenant_id", sa.String(40), nullable=False),
        sa.Column("client_id", sa.String(2000), nullable=False),
        sa.Column("scope", sa.String(200), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.UniqueConstraint("user_id", "client_id", name="ux_oauth_consents_user_client"),
    )


def downgrade() -> None:
    for table in ("oauth_consents", "oauth_tokens", "oauth_codes", "oauth_clients"):
        op.drop_table(table)
    op.drop_index("ix_agent_assertions_expires_at", table_name="agent_assertions")
    op.drop_table("agent_assertions")
    op.drop_table("anonymous_identities")
