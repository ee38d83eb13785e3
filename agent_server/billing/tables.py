"""Billing tables (migration 0011_billing). Money is integer minor units with a currency, never floats.

Provider objects (customers, subscriptions, invoices, events) keep the provider's ids; our state is
what the provider's events told us, applied once each (``billing_events``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, Column, UniqueConstraint
from sqlmodel import Field, SQLModel


class BillingAccount(SQLModel, table=True):
    """A tenant's standing with the payment provider: customer, subscription, period, grace."""

    __tablename__ = "billing_accounts"

    tenant_id: str = Field(primary_key=True, foreign_key="tenants.id", max_length=40)
    provider: str = Field(max_length=20, description="sandbox or stripe")
    customer_id: str | None = Field(default=None, max_length=100, index=True)
    subscription_id: str | None = Field(default=None, max_length=100, index=True)
    # none, trialing, active, past_due, canceled, incomplete, unpaid (the provider's words)
    subscription_status: str = Field(default="none", max_length=20)
    plan_id: str | None = Field(default=None, max_length=40, description="The plan being paid for.")
    current_period_start: datetime | None = None
    current_period_end: datetime | None = None
    cancel_at_period_end: bool = False
    grace_until: datetime | None = Field(default=None, description="After a failed renewal.")
    payment_method: dict[str, Any] | None = Field(
        default=None, sa_column=Column(JSON, nullable=True), description="{brand, last4, exp}: no secrets."
    )
    # The provider's ``created`` of the newest event applied to the subscription: older ones arriving
    # late do not roll the state back.
    subscription_event_at: int | None = None
    updated_at: datetime


class BillingEvent(SQLModel, table=True):
    """Every provider event received, applied exactly once (the provider's event id is the key)."""

    __tablename__ = "billing_events"

    id: str = Field(primary_key=True, max_length=100)
    type: str = Field(max_length=100)
    provider_created: int = Field(description="The provider's timestamp of the event (Unix seconds).")
    tenant_id: str | None = Field(default=None, max_length=40, index=True)
    received_at: datetime
    outcome: str = Field(max_length=40, description="applied, ignored (stale or unknown), ...")


class Invoice(SQLModel, table=True):
    __tablename__ = "invoices"

    id: str = Field(primary_key=True, max_length=100, description="The provider's invoice id.")
    tenant_id: str = Field(foreign_key="tenants.id", max_length=40, index=True)
    status: str = Field(max_length=20, description="draft, open, paid, uncollectible, void")
    amount_due_minor: int
    amount_paid_minor: int = 0
    currency: str = Field(max_length=3)
    period_start: datetime | None = None
    period_end: datetime | None = None
    hosted_url: str | None = Field(default=None, max_length=500)
    created_at: datetime
    updated_at: datetime


class UsageReport(SQLModel, table=True):
    """Usage of one closed billing period reported to the provider: the unique key makes it once."""

    __tablename__ = "billing_usage_reports"
    __table_args__ = (UniqueConstraint("tenant_id", "period_start", name="ux_billing_usage_reports_period"),)

    id: str = Field(primary_key=True, max_length=40)
    tenant_id: str = Field(foreign_key="tenants.id", max_length=40, index=True)
    period_start: datetime
    period_end: datetime
    amount_minor: int
    currency: str = Field(max_length=3)
    lines: list[dict[str, Any]] = Field(sa_column=Column(JSON, nullable=False))
    provider_refs: list[str] = Field(sa_column=Column(JSON, nullable=False))
    status: str = Field(max_length=20, description="due, claimed, reported")
    created_at: datetime
    # When a process took the period to report it; a claim older than a few minutes is taken over.
    claimed_at: datetime | None = None
    reported_at: datetime | None = None


class PlanCheckout(SQLModel, table=True):
    """A plan subscription started by ``create-checkout`` and finished at the provider."""

    __tablename__ = "billing_checkouts"

    id: str = Field(primary_key=True, max_length=40, description="bco_…")
    tenant_id: str = Field(foreign_key="tenants.id", max_length=40, index=True)
    plan_id: str = Field(max_length=40)
    provider_ref: str = Field(max_length=200, unique=True)
    status: str = Field(max_length=20, description="open, complete, expired")
    created_at: datetime
    completed_at: datetime | None = None


class SubscriptionSchedule(SQLModel, table=True):
    """A multi-year schedule kept by us: yearly phases applied at each boundary."""

    __tablename__ = "billing_schedules"

    id: str = Field(primary_key=True, max_length=40, description="sch_…")
    tenant_id: str = Field(foreign_key="tenants.id", max_length=40, index=True)
    phases: list[dict[str, Any]] = Field(sa_column=Column(JSON, nullable=False))
    status: str = Field(max_length=20, description="active, completed, canceled")
    created_at: datetime
    updated_at: datetime


class BillingOrder(SQLModel, table=True):
    """A tenant's one-off purchase (consulting, training seats, workspace seats, hardware), paid at
    the provider; anonymous purchases of the public site are ``orders`` (agent_server/site/tables.py)."""

    __tablename__ = "billing_orders"

    id: str = Field(primary_key=True, max_length=40, description="bord_…")
    tenant_id: str = Field(foreign_key="tenants.id", max_length=40, index=True)
    item_kind: str = Field(max_length=20, description="consulting, training, workspace, hardware")
    item_id: str = Field(max_length=100)
    item_name: str = Field(max_length=200)
    quantity: int
    unit_amount_minor: int = Field(sa_column=Column(BigInteger, nullable=False))
    amount_minor: int = Field(sa_column=Column(BigInteger, nullable=False))
    currency: str = Field(max_length=3)
    details: dict[str, Any] = Field(
        sa_column=Column(JSON, nullable=False), description="e.g. {seats, months}"
    )
    status: str = Field(max_length=16, index=True, description="pending, paid, failed, expired")
    provider: str = Field(max_length=20)
    provider_ref: str = Field(max_length=200, index=True)
    checkout_url: str = Field(max_length=500)
    created_at: datetime
    updated_at: datetime
    expires_at: datetime


class SandboxObject(SQLModel, table=True):
    """An object of the sandbox provider (customer, price, session, subscription, invoice, ...), in the
    database so that every process of a deployment sees the same sandbox."""

    __tablename__ = "billing_sandbox_objects"
    __table_args__ = (UniqueConstraint("kind", "lookup", name="ux_billing_sandbox_objects_lookup"),)

    id: str = Field(primary_key=True, max_length=100)
    kind: str = Field(max_length=30)
    lookup: str | None = Field(default=None, max_length=200, description="A lookup or idempotency key.")
    owner: str | None = Field(default=None, max_length=100, index=True, description="The customer.")
    data: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False), description="Stripe's shape.")
    created: int = Field(sa_column=Column(BigInteger, nullable=False), description="Unix seconds.")
    updated_at: datetime
