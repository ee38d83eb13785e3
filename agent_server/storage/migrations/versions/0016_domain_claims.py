"""tenant_domains: one row per claim (domain, tenant), at most one verified row per domain

Before, the domain was the primary key: a second tenant's claim took over the first one's pending
row. Now pending claims of one domain coexist; a unique index over the verified rows keeps one
holder. The table is copied into its new shape (the primary key changes, which neither SQLite nor
a batch ALTER does in place on both databases).

Revision ID: 0016_domain_claims
Revises: 0009_passkeys
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016_domain_claims"
down_revision = "0009_passkeys"  # the accounts branch, where tenant_domains lives
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)
COLUMNS = "domain, tenant_id, verification_token, created_at, verified_at"
VERIFIED = sa.text("verified_at IS NOT NULL")


def _create(primary_key: tuple[str, ...], name: str) -> None:
    op.create_table(
        "tenant_domains",
        sa.Column("domain", sa.String(253), nullable=False),
        sa.Column("tenant_id", sa.String(40), sa.ForeignKey("tenants.id"), nullable=False),
        sa.Column("verification_token", sa.String(64), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("verified_at", TS, nullable=True),
        sa.PrimaryKeyConstraint(*primary_key, name=name),
    )
    op.create_index("ix_tenant_domains_tenant_id", "tenant_domains", ["tenant_id"])


def upgrade() -> None:
    op.drop_index("ix_tenant_domains_tenant_id", table_name="tenant_domains")
    op.rename_table("tenant_domains", "tenant_domains_0007")
    _create(("domain", "tenant_id"), "pk_tenant_domains")
    op.create_index(
        "ux_tenant_domains_verified",
        "tenant_domains",
        ["domain"],
        unique=True,
        sqlite_where=VERIFIED,
        postgresql_where=VERIFIED,
    )
    op.execute(f"INSERT INTO tenant_domains ({COLUMNS}) SELECT {COLUMNS} FROM tenant_domains_0007")
    op.drop_table("tenant_domains_0007")


def downgrade() -> None:
    # One row per domain again: the verified claim, else the oldest one.
    op.drop_index("ux_tenant_domains_verified", table_name="tenant_domains")
    op.drop_index("ix_tenant_domains_tenant_id", table_name="tenant_domains")
    op.rename_table("tenant_domains", "tenant_domains_0019")
    _create(("domain",), "pk_tenant_domains_0007")
    op.execute(
        f"INSERT INTO tenant_domains ({COLUMNS}) SELECT {COLUMNS} FROM tenant_domains_0019 AS claim "
        "WHERE NOT EXISTS (SELECT 1 FROM tenant_domains_0019 AS other WHERE other.domain = claim.domain "
        "AND (other.verified_at IS NOT NULL AND claim.verified_at IS NULL "
        "OR (other.verified_at IS NULL) = (claim.verified_at IS NULL) "
        "AND (other.created_at < claim.created_at "
        "OR other.created_at = claim.created_at AND other.tenant_id < claim.tenant_id)))"
    )
    op.drop_table("tenant_domains_0019")
