"""members: users.role, users without an organisation, invitations

Revision ID: 0019_members
Revises: 0018_negotiated_plans

Backfill (docs/accounts.md, "Roles"): in each tenant the oldest user with ``tenant:admin`` becomes its
owner and every other user with ``tenant:admin`` an admin; users without it keep no role (they had no
rights before and have none now, until an admin gives them a role).
"""

from __future__ import annotations

import json

import sqlalchemy as sa
from alembic import op

revision = "0019_members"
down_revision = "0018_negotiated_plans"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    with op.batch_alter_table("users") as users:
        users.add_column(sa.Column("role", sa.String(16), nullable=True))
        users.alter_column("tenant_id", existing_type=sa.String(40), nullable=True)
    _backfill_roles()
    op.create_table(
        "invitations",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("tenant_id", sa.String(40), sa.ForeignKey("tenants.id"), nullable=False),
        sa.Column("email", sa.String(320), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("invited_by", sa.String(40), sa.ForeignKey("users.id"), nullable=False),
        sa.Column("digest", sa.String(64), nullable=False, unique=True),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("sent_at", TS, nullable=False),
        sa.Column("sends", sa.Integer(), nullable=False, server_default="1"),
        sa.Column("expires_at", TS, nullable=False),
        sa.Column("accepted_at", TS, nullable=True),
        sa.Column("accepted_by", sa.String(40), sa.ForeignKey("users.id"), nullable=True),
        sa.Column("revoked_at", TS, nullable=True),
    )
    op.create_index("ix_invitations_tenant_id", "invitations", ["tenant_id"])
    op.create_index("ix_invitations_email", "invitations", ["email"])


def _backfill_roles() -> None:
    bind = op.get_bind()
    rows = bind.execute(sa.text("SELECT id, tenant_id, permissions FROM users ORDER BY created_at, id")).all()
    owners: set[str] = set()
    changes = []
    for user_id, tenant_id, permissions in rows:
        if "tenant:admin" not in _as_list(permissions):
            continue
        role = "admin" if tenant_id in owners else "owner"
        owners.add(tenant_id)
        changes.append({"id": user_id, "role": role})
    if changes:
        bind.execute(sa.text("UPDATE users SET role = :role WHERE id = :id"), changes)


def _as_list(value: object) -> list[str]:
    """A JSON column as raw SQL gives it: a list (PostgreSQL) or its text (SQLite)."""
    if isinstance(value, list):
        return [str(v) for v in value]
    if isinstance(value, (str, bytes)):
        parsed = json.loads(value)
        return [str(v) for v in parsed] if isinstance(parsed, list) else []
    return []


def downgrade() -> None:
    bind = op.get_bind()
    without = bind.execute(sa.text("SELECT count(*) FROM users WHERE tenant_id IS NULL")).scalar()
    if without:
        raise RuntimeError(
            f"{without} users belong to no organisation; users.tenant_id cannot become NOT NULL again. "
            "Add them to an organisation first."
        )
    op.drop_index("ix_invitations_email", table_name="invitations")
    op.drop_index("ix_invitations_tenant_id", table_name="invitations")
    op.drop_table("invitations")
    with op.batch_alter_table("users") as users:
        users.alter_column("tenant_id", existing_type=sa.String(40), nullable=False)
        users.drop_column("role")
