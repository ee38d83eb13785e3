"""Tables of the public site: checkout orders and newsletter / waitlist subscriptions."""

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
    """One address on one list; subscribing again returns the existing row."""

    __tablename__ = "subscriptions"
    __table_args__ = (UniqueConstraint("email", "list", name="uq_subscriptions_email_list"),)

    id: str = Field(primary_key=True, max_length=40, description="sub_<hex>")
    email: str = Field(max_length=320, description="lower-cased")
    list: str = Field(max_length=20, description="newsletter | waitlist")
    name: str | None = Field(default=None, max_length=200)
    status: str = Field(max_length=16, description="active")
    created_at: datetime
