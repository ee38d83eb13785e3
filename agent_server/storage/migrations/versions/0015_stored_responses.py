"""stored_responses: Responses API answers kept for GET /v1/responses/{id} and previous_response_id

Revision ID: 0015_stored_responses
Revises: 0014_plan_max_keys
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015_stored_responses"
down_revision = "0014_plan_max_keys"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "stored_responses",
        sa.Column("tenant_id", sa.String(40), nullable=False),
        sa.Column("id", sa.String(256), nullable=False),
        sa.Column("key_id", sa.String(40), nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("response", sa.Text(), nullable=False),
        sa.Column("input_items", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("tenant_id", "id", name="pk_stored_responses"),
    )
    # The retention sweep deletes by expiry.
    op.create_index("ix_stored_responses_expires_at", "stored_responses", ["expires_at"])


def downgrade() -> None:
    op.drop_index("ix_stored_responses_expires_at", table_name="stored_responses")
    op.drop_table("stored_responses")
