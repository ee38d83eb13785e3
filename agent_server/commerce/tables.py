"""Tables of agentic commerce (migration 0023): the agent platforms allowed to buy, their checkout
sessions and the orders those sessions made. Amounts are integer minor units."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Column, Text
from sqlmodel import Field, SQLModel


class AgentPlatform(SQLModel, table=True):
    """An agent platform (e.g. a chat assistant) that calls the ACP routes with its bearer credential.
    Only the credential's digest is kept; the webhook signing secret is encrypted (it signs)."""

    __tablename__ = "acp_platforms"

    id: str = Field(primary_key=True, max_length=40, description="plat_<hex>")
    name: str = Field(max_length=200, unique=True)
    credential_digest: str = Field(max_length=64, unique=True, description="SHA-256 hex of the credential")
    credential_hint: str = Field(max_length=16, description="the credential's last characters")
    webhook_url: str | None = Field(default=None, max_length=2048)
    signing_secret_encrypted: str = Field(sa_column=Column(Text, nullable=False))
    created_at: datetime
    revoked_at: datetime | None = None


class CheckoutSessionRecord(SQLModel, table=True):
    """One ACP checkout session. ``cart`` holds what the agent sent (items, buyer, fulfillment details,
    selection, payment attempts); prices are computed from the content pack on every read."""

    __tablename__ = "acp_checkout_sessions"

    id: str = Field(primary_key=True, max_length=40, description="cs_<hex>")
    platform_id: str = Field(max_length=40, index=True)
    status: str = Field(max_length=32)
    currency: str = Field(max_length=3, description="lower case, as ACP writes it")
    cart: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False))
    order_id: str | None = Field(default=None, max_length=40)
    created_at: datetime
    updated_at: datetime
    expires_at: datetime


class CommerceOrderRecord(SQLModel, table=True):
    """The order a completed session made; one per session (unique), so a race cannot make two."""

    __tablename__ = "acp_orders"

    id: str = Field(primary_key=True, max_length=40, description="acpord_<hex>")
    checkout_session_id: str = Field(max_length=40, unique=True)
    platform_id: str = Field(max_length=40, index=True)
    status: str = Field(max_length=20, description="confirmed | completed | canceled")
    currency: str = Field(max_length=3)
    amount_minor: int
    payment_provider: str = Field(max_length=40)
    payment_ref: str = Field(max_length=200, description="the charge at the payment provider")
    email: str = Field(max_length=320)
    lines: list[dict[str, Any]] = Field(sa_column=Column(JSON, nullable=False))
    refunded_minor: int = 0
    refund_ref: str | None = Field(default=None, max_length=200, description="the provider's refund")
    refunded_at: datetime | None = None
    created_at: datetime
    updated_at: datetime
