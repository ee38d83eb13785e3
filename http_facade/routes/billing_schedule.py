"""``POST`` and ``GET /{segment}/multi-year-schedule``: yearly phases of plans kept by us and applied
to the subscription at each boundary (agent_server/billing/schedules.py). Tenant admin JWT.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from fastapi import APIRouter, Request
from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, StrictInt, field_validator

from http_facade.routes.admin_common import ActorDep
from http_facade.routes.billing_common import provider_errors
from http_facade.routes.billing_subscription import ADMIN_JWT, PLAN_ID
from http_facade.routes.billing_webhooks import engine_of

router = APIRouter(tags=["billing"])
MAX_YEARS = 10


class PhaseIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    plan_id: str = Field(pattern=PLAN_ID)
    years: StrictInt = Field(ge=1, le=5, description="Whole years; the next phase starts when this one ends.")


class ScheduleBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    phases: list[PhaseIn] = Field(min_length=1, max_length=10)
    start: AwareDatetime | None = Field(
        default=None, description="When the first phase starts (RFC 3339 with offset); default: now."
    )

    @field_validator("phases")
    @classmethod
    def _at_most_ten_years(cls, phases: list[PhaseIn]) -> list[PhaseIn]:
        if sum(phase.years for phase in phases) > MAX_YEARS:
            raise ValueError(f"the phases may span at most {MAX_YEARS} years")
        return phases


class Phase(BaseModel):
    plan_id: str
    years: int
    starts_at: str
    ends_at: str
    applied_at: str | None = Field(description="When the plan change was made at the provider.")


class ScheduleView(BaseModel):
    object: Literal["subscription_schedule"] = "subscription_schedule"
    id: str
    status: str = Field(description="active, completed (every phase started) or canceled (replaced)")
    phases: list[Phase]
    current_phase: int | None = Field(description="Index of the phase running now.")
    current_plan_id: str | None
    next_change_at: str | None
    created_at: str


@router.post(
    "/multi-year-schedule",
    summary="Create the tenant's multi-year schedule (yearly phases; replaces an active one)",
    response_model=ScheduleView,
    responses=provider_errors(402),
    openapi_extra=ADMIN_JWT,
)
async def create_schedule(body: ScheduleBody, actor: ActorDep, request: Request) -> dict[str, Any]:
    phases = [(phase.plan_id, phase.years) for phase in body.phases]
    start: datetime | None = body.start
    return await engine_of(request).schedules.create(actor.tenant_id, phases, start, actor.user_id)


@router.get(
    "/multi-year-schedule",
    summary="The tenant's multi-year schedule with its current phase",
    response_model=ScheduleView,
    openapi_extra=ADMIN_JWT,
)
async def get_schedule(actor: ActorDep, request: Request) -> dict[str, Any]:
    return await engine_of(request).schedules.get(actor.tenant_id)
