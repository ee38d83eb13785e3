"""Foundation tables: async jobs and idempotency records (shared by every mutating surface)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, Column, Text
from sqlmodel import Field, SQLModel


class JobRecord(SQLModel, table=True):
    __tablename__ = "jobs"

    id: str = Field(primary_key=True, max_length=40)
    type: str = Field(max_length=32)
    input: dict = Field(sa_column=Column(JSON, nullable=False))
    status: str = Field(max_length=16, index=True)
    result: dict | None = Field(default=None, sa_column=Column(JSON))
    error: dict | None = Field(default=None, sa_column=Column(JSON))
    created_at: datetime
    updated_at: datetime
    expires_at: datetime = Field(index=True)


class IdempotencyRecord(SQLModel, table=True):
    """A stored response of a mutating request, replayed for the same key and body for 24 hours."""

    __tablename__ = "idempotency_records"

    scope_key: str = Field(primary_key=True, max_length=300, description="route + caller + Idempotency-Key")
    body_digest: str = Field(max_length=64)
    status_code: int
    response_body: str = Field(sa_column=Column(Text, nullable=False))
    content_type: str = Field(max_length=100)
    created_at: datetime
    expires_at: datetime = Field(index=True)
