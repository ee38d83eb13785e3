"""Stored Responses API answers (migration ``0015_stored_responses``): one row per response a
tenant created with ``store`` not false, kept ``AGENTGATE_RESPONSES_RETENTION_DAYS`` days.

The key is the tenant and the response id: a tenant reads, chains and deletes only its own, and
two tenants can never meet on an id an upstream reused. The response object and its input items
are stored as the JSON the API returns (``Text``: read whole, never queried inside).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Column, Text
from sqlmodel import Field, SQLModel


class StoredResponse(SQLModel, table=True):
    __tablename__ = "stored_responses"

    tenant_id: str = Field(primary_key=True, max_length=40)
    id: str = Field(primary_key=True, max_length=256, description="the response id, as the API returned it")
    key_id: str = Field(max_length=40, description="the API key that created it")
    model: str = Field(max_length=200, description="public model id")
    created_at: datetime
    expires_at: datetime = Field(index=True, description="deleted by the retention sweep from then on")
    response: str = Field(sa_column=Column(Text, nullable=False), description="the response object (JSON)")
    input_items: str = Field(
        sa_column=Column(Text, nullable=False), description="the conversation it answered, as items (JSON)"
    )
