"""``POST /{segment}/subscription``: change the plan (prorated unless told not to), cancel at the
period's end, or resume (agent_server/billing/plan_changes.py). Tenant admin JWT; the token's tenant.
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field, StrictBool

from agent_server.foundation.errors import ValidationFailed
from http_facade.routes.admin_common import ActorDep
from http_facade.routes.billing_common import provider_errors
from http_facade.routes.billing_webhooks import engine_of

router = APIRouter(tags=["billing"])
ADMIN_JWT: dict[str, Any] = {"security": [{"adminJWT": []}]}  # the tenant admin's JWT (ActorDep)
PLAN_ID = r"^[a-z0-9][a-z0-9_-]{0,39}$"


class SubscriptionAction(BaseModel):
    model_config = ConfigDict(extra="forbid")

    action: Literal["change", "cancel", "resume"] = Field(
        description="change: move to plan_id; cancel: end at the current period's end; resume: undo a cancel."
    )
    plan_id: str | None = Field(default=None, pattern=PLAN_ID, description="The new plan (change only).")
    prorate: StrictBool = Field(
        default=True, description="change only: credit the unused time and charge the new plan's rest now."
    )


class SubscriptionView(BaseModel):
    object: Literal["subscription"] = "subscription"
    id: str | None
    status: str = Field(description="The provider's status: active, trialing, past_due, canceled, ...")
    plan_id: str | None
    current_period_start: str | None
    current_period_end: str | None
    cancel_at_period_end: bool
    grace_until: str | None = Field(description="Set after a failed renewal: live keys work until then.")


@router.post(
    "/subscription",
    summary="Change the plan (prorated), cancel at period end, or resume the tenant's subscription",
    response_model=SubscriptionView,
    responses=provider_errors(402),
    openapi_extra=ADMIN_JWT,
)
async def subscription_action(
    body: SubscriptionAction, actor: ActorDep, request: Request
) -> SubscriptionView:
    changes = engine_of(request).changes
    if body.action != "change" and body.plan_id is not None:
        raise ValidationFailed("plan_id goes with action 'change' only.", param="plan_id")
    if body.action == "change":
        if body.plan_id is None:
            raise ValidationFailed("action 'change' needs plan_id.", param="plan_id")
        view = await changes.change(actor.tenant_id, body.plan_id, body.prorate, actor.user_id)
    elif body.action == "cancel":
        view = await changes.cancel(actor.tenant_id, actor.user_id)
    else:
        view = await changes.resume(actor.tenant_id, actor.user_id)
    return SubscriptionView(**view)
