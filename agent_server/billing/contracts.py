"""Plans sold by negotiation: set by a platform administrator, with the end of their contract.

A plan with a list price is self-serve (registration offers it, a subscription pays for it) and
carries no contract end. A plan without one (``price_monthly: null``, Enterprise) is paid by its
contract until ``tenants.contract_ends_at``; from then on, or without an end once the trial is over,
its live keys get 402 like any unpaid plan (trial.py). One rule for every way a platform
administrator sets a plan: ``POST``/``PATCH /admin/platform/tenants`` and ``agentgate tenants
create|set-plan`` (docs/billing.md, "Plans").
"""

from __future__ import annotations

from datetime import datetime

from agent_server.foundation.errors import ValidationFailed
from agent_server.foundation.timeutil import iso, utc

PARAM = "contract_ends_at"
MAX_CONTRACT_SECONDS = 10 * 366 * 86_400  # ten years: a contract, not a way to say "forever"


def contract_end(
    *,
    plan_name: str,
    self_serve: bool,
    moving_in: bool,
    ends_at: datetime | None,
    current: datetime | None,
    now: float,
    param: str = PARAM,
) -> datetime | None:
    """The tenant's contract end once the plan is set.

    ``moving_in``: the tenant is moved onto this plan from another one, which needs an end unless it
    already has one. A self-serve plan has none (sending one is 400); a negotiated plan keeps
    ``current`` when no end is sent; a new end lies in the future, at most ten years away.
    """
    if self_serve:
        if ends_at is not None:
            raise ValidationFailed(
                f"The {plan_name} plan is self-serve: it is paid by subscription and has no contract end. "
                f"Send {param} only with a negotiated plan.",
                param=param,
            )
        return None
    if ends_at is None:
        if moving_in and current is None:
            raise ValidationFailed(
                f"The {plan_name} plan is sold by negotiation: set it with the contract's end in {param} "
                "(RFC 3339 with an offset). Without one its live keys are refused like an unpaid plan's.",
                param=param,
            )
        return current
    moment = ends_at.timestamp()
    if moment <= now:
        raise ValidationFailed(f"{param} must be in the future; now is {iso(utc(now))}.", param=param)
    if moment > now + MAX_CONTRACT_SECONDS:
        raise ValidationFailed(f"{param} may be at most ten years from now.", param=param)
    return utc(moment)
