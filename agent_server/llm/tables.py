"""The routing table in the database: one row per (model, backend), plus one revision row.

Every write of the table (seeding now, ``PATCH /admin/llm-routing/`` later) replaces the rows and
bumps ``llm_routing_state.revision`` in one transaction; each process compares that single integer
at most once per second and reloads the rows when it grew.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import UniqueConstraint
from sqlmodel import Field, SQLModel

STATE_ROW_ID = 1


class LLMRouteRecord(SQLModel, table=True):
    __tablename__ = "llm_routes"
    __table_args__ = (UniqueConstraint("model", "position", name="uq_llm_routes_model_position"),)

    id: int | None = Field(default=None, primary_key=True)
    model: str = Field(max_length=200, index=True, description="public model id")
    position: int = Field(description="order of the entry inside the model's route, from 0")
    backend: str = Field(max_length=100, description="'mock' or the name of a configured upstream")
    weight: float = Field(default=1.0)
    priority: int = Field(default=0)
    revision: int = Field(description="the routing revision that wrote this row")


class LLMRoutingState(SQLModel, table=True):
    """A single row (id 1): the current revision of the routing table."""

    __tablename__ = "llm_routing_state"

    id: int = Field(default=STATE_ROW_ID, primary_key=True)
    revision: int
    updated_at: datetime
    source: str = Field(default="settings", max_length=40, description="settings | admin")
