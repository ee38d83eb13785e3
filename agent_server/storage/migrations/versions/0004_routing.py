"""routing: the per-model LLM routing table and its revision

Revision ID: 0004_routing
Revises: 0001_foundation
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004_routing"
down_revision = "0001_foundation"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "llm_routes",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("backend", sa.String(100), nullable=False),
        sa.Column("weight", sa.Float(), nullable=False),
        sa.Column("priority", sa.Integer(), nullable=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.UniqueConstraint("model", "position", name="uq_llm_routes_model_position"),
    )
    op.create_index("ix_llm_routes_model", "llm_routes", ["model"])
    op.create_table(
        "llm_routing_state",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.Column("source", sa.String(40), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("llm_routing_state")
    op.drop_index("ix_llm_routes_model", table_name="llm_routes")
    op.drop_table("llm_routes")
