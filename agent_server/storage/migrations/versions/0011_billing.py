"""billing: accounts with the payment provider, events applied once, invoices, usage reports,
plan checkouts, multi-year schedules, tenants' one-off orders and the sandbox provider's objects

Revision ID: 0011_billing
Revises: 0002_gateway
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011_billing"
down_revision = "0002_gateway"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def _tenant() -> sa.Column:
    return sa.Column("tenant_id", sa.String(40), sa.ForeignKey("tenants.id"), nullable=False)


def upgrade() -> None:
    op.create_table(
        "billing_accounts",
        sa.Column("tenant_id", sa.String(40), sa.ForeignKey("tenants.id"), primary_key=True),
        sa.Column("provider", sa.String(20), nullable=False),
        sa.Column("customer_id", sa.String(100), nullable=True),
        sa.Column("subscription_id", sa.String(100), nullable=True),
        sa.Column("subscription_status", sa.String(20), nullable=False),
        sa.Column("plan_id", sa.String(40), nullable=True),
        sa.Column("current_period_start", TS, nullable=True),
        sa.Column("current_period_end", TS, nullable=True),
        sa.Column("cancel_at_period_end", sa.Boolean(), nullable=False),
        sa.Column("grace_until", TS, nullable=True),
        sa.Column("payment_method", sa.JSON(), nullable=True),
        sa.Column("subscription_event_at", sa.Integer(), nullable=True),
        sa.Column("updated_at", TS, nullable=False),
    )
    op.create_index("ix_billing_accounts_customer_id", "billing_accounts", ["customer_id"])
    op.create_index("ix_billing_accounts_subscription_id", "billing_accounts", ["subscription_id"])
    op.create_table(
        "billing_events",
        sa.Column("id", sa.String(100), primary_key=True),
        sa.Column("type", sa.String(100), nullable=False),
        sa.Column("provider_created", sa.Integer(), nullable=False),
        sa.Column("tenant_id", sa.String(40), nullable=True),
        sa.Column("received_at", TS, nullable=False),
        sa.Column("outcome", sa.String(40), nullable=False),
    )
    op.create_index("ix_billing_events_tenant_id", "billing_events", ["tenant_id"])
    op.create_table(
        "invoices",
        sa.Column("id", sa.String(100), primary_key=True),
        _tenant(),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("amount_due_minor", sa.Integer(), nullable=False),
        sa.Column("amount_paid_minor", sa.Integer(), nullable=False),
        sa.Column("currency", sa.String(3), nullable=False),
        sa.Column("period_start", TS, nullable=True),
        sa.Column("period_end", TS, nullable=True),
        sa.Column("hosted_url", sa.String(500), nullable=True),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("updated_at", TS, nullable=False),
    )
    op.create_index("ix_invoices_tenant_id", "invoices", ["tenant_id"])
    op.create_table(
        "billing_usage_reports",
        sa.Column("id", sa.String(40), primary_key=True),
        _tenant(),
        sa.Column("period_start", TS, nullable=False),
        sa.Column("period_end", TS, nullable=False),
        sa.Column("amount_minor", sa.Integer(), nullable=False),
        sa.Column("currency", sa.String(3), nullable=False),
        sa.Column("lines", sa.JSON(), nullable=False),
        sa.Column("provider_refs", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("claimed_at", TS, nullable=True),
        sa.Column("reported_at", TS, nullable=True),
        sa.UniqueConstraint("tenant_id", "period_start", name="ux_billing_usage_reports_period"),
    )
    op.create_index("ix_billing_usage_reports_tenant_id", "billing_usage_reports", ["tenant_id"])
    op.create_table(
        "billing_checkouts",
        sa.Column("id", sa.String(40), primary_key=True),
        _tenant(),
        sa.Column("plan_id", sa.String(40), nullable=False),
        sa.Column("provider_ref", sa.String(200), nullable=False, unique=True),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("completed_at", TS, nullable=True),
    )
    op.create_index("ix_billing_checkouts_tenant_id", "billing_checkouts", ["tenant_id"])
    op.create_table(
        "billing_schedules",
        sa.Column("id", sa.String(40), primary_key=True),
        _tenant(),
        sa.Column("phases", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("updated_at", TS, nullable=False),
    )
    op.create_index("ix_billing_schedules_tenant_id", "billing_schedules", ["tenant_id"])
    op.create_table(
        "billing_orders",
        sa.Column("id", sa.String(40), primary_key=True),
        _tenant(),
        sa.Column("item_kind", sa.String(20), nullable=False),
        sa.Column("item_id", sa.String(100), nullable=False),
        sa.Column("item_name", sa.String(200), nullable=False),
        sa.Column("quantity", sa.Integer(), nullable=False),
        sa.Column("unit_amount_minor", sa.BigInteger(), nullable=False),
        sa.Column("amount_minor", sa.BigInteger(), nullable=False),
        sa.Column("currency", sa.String(3), nullable=False),
        sa.Column("details", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("provider", sa.String(20), nullable=False),
        sa.Column("provider_ref", sa.String(200), nullable=False),
        sa.Column("checkout_url", sa.String(500), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("updated_at", TS, nullable=False),
        sa.Column("expires_at", TS, nullable=False),
    )
    op.create_index("ix_billing_orders_tenant_id", "billing_orders", ["tenant_id"])
    op.create_index("ix_billing_orders_status", "billing_orders", ["status"])
    op.create_index("ix_billing_orders_provider_ref", "billing_orders", ["provider_ref"])
    op.create_table(
        "billing_sandbox_objects",
        sa.Column("id", sa.String(100), primary_key=True),
        sa.Column("kind", sa.String(30), nullable=False),
        sa.Column("lookup", sa.String(200), nullable=True),
        sa.Column("owner", sa.String(100), nullable=True),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.Column("created", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", TS, nullable=False),
        sa.UniqueConstraint("kind", "lookup", name="ux_billing_sandbox_objects_lookup"),
    )
    op.create_index("ix_billing_sandbox_objects_owner", "billing_sandbox_objects", ["owner"])


def downgrade() -> None:
    for table in (
        "billing_sandbox_objects",
        "billing_orders",
        "billing_schedules",
        "billing_checkouts",
        "billing_usage_reports",
        "invoices",
        "billing_events",
        "billing_accounts",
    ):
        op.drop_table(table)
