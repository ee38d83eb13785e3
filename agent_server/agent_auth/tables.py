"""Agent sign-in tables (migration 0021_oauth).

An anonymous agent's keys live in a tenant of their own, one per e-mail address, on the plan of
anonymous agents (``plans.yaml`` ``anonymous_agents``). Only the SHA-256 of the lower-cased address
is kept: enough to find that tenant again, and to move its keys to the organisation the address
registers later, without holding anyone's address.
"""

from __future__ import annotations

from datetime import datetime

from sqlmodel import Field, SQLModel


class AnonymousIdentity(SQLModel, table=True):
    __tablename__ = "anonymous_identities"

    email_digest: str = Field(
        primary_key=True, max_length=64, description="sha256 of the lower-cased address"
    )
    tenant_id: str = Field(foreign_key="tenants.id", max_length=40, unique=True)
    created_at: datetime
    # The organisation the address registered: its live keys moved there then (registration.py).
    claimed_by: str | None = Field(default=None, foreign_key="tenants.id", max_length=40)
    claimed_at: datetime | None = None


class AssertionUse(SQLModel, table=True):
    """An identity assertion taken once: its issuer and ``jti``, kept until the assertion expires."""

    __tablename__ = "agent_assertions"

    digest: str = Field(primary_key=True, max_length=64, description="sha256 of issuer and jti")
    expires_at: datetime = Field(index=True)
