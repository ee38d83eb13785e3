"""Tables of the public site: checkout orders, newsletter / waitlist subscriptions and requests for
the discovery call (leads)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import UniqueConstraint
from sqlmodel import Field, SQLModel


class OrderRecord(SQLModel, table=True):
    """A fixed-fee checkout; amounts are integer minor units (cents), never floats."""

    __tablename__ = "orders"

    id: str = Field(primary_key=True, max_length=40, description="ord_<hex>")
    item_kind: str = Field(max_length=20, description="consulting | training")
    item_id: str = Field(max_length=100)
    item_name: str = Field(max_length=200)
    quantity: int
    unit_amount_minor: int
    amount_minor: int
    currency: str = Field(max_length=3)
    email: str = Field(max_length=320)
    name: str | None = Field(default=None, max_length=200)
    status: str = Field(max_length=16, index=True, description="pending | paid | cancelled | expired")
    provider: str = Field(max_length=40)
    provider_ref: str = Field(max_length=200)
    checkout_url: str = Field(max_length=500)
    created_at: datetime
    updated_at: datetime
    expires_at: datetime


class SubscriptionRecord(SQLModel, table=True):
    """One address on one list; subscribing again returns the existing row. A new row is ``pending``
    until the link mailed to the address is followed (double opt-in, migration 0020)."""

    __tablename__ = "subscriptions"
    __table_args__ = (UniqueConstraint("email", "list", name="uq_subscriptions_email_list"),)

    id: str = Field(primary_key=True, max_length=40, description="sub_<hex>")
    email: str = Field(max_length=320, description="lower-cased")
    list: str = Field(max_length=20, description="newsletter | waitlist")
    name: str | None = Field(default=None, max_length=200)
    status: str = Field(max_length=16, description="pending | active")
    created_at: datetime
    # The confirmation link's token, as a digest; cleared when the link is followed.
    confirm_digest: str | None = Field(default=None, max_length=64, unique=True)
    confirm_expires_at: datetime | None = None
    confirmed_at: datetime | None = None


class LeadRecord(SQLModel, table=True):
    """A request for the free discovery call, made on the site or by an agent (migration 0020)."""

    __tablename__ = "discovery_call_requests"

    id: str = Field(primary_key=True, max_length=40, description="lead_<hex>")
    name: str = Field(max_length=200)
    email: str = Field(max_length=320, description="lower-cased")
    company: str | None = Field(default=None, max_length=200)
    topic: str = Field(max_length=200, description="one of the call's topics, or 'other'")
    language: str = Field(max_length=8)
    preferred_times: str | None = Field(default=None, max_length=300)
    message: str | None = Field(default=None, max_length=2000)
    source: str = Field(max_length=16, description="page | api")
    status: str = Field(max_length=16, index=True, description="new")
    created_at: datetime = Field(index=True)
