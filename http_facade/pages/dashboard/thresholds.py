"""Usage alerts (``GET/PUT /admin/usage/thresholds``) as a form on the webhooks page: the percents of
the plan's monthly token quota at which ``usage.threshold_reached`` is sent, with this month's use.

The form takes the percents as people write them ("50, 80, 100"); the service checks them as it does
for the JSON route. The alerts reach the organisation through its webhooks, so on a plan without
webhooks the page says so (the plan gate of the webhooks page), and a plan without a quota never
sends one.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field
from starlette.requests import Request

from agent_server.admin.wiring import admin_services
from agent_server.foundation.errors import AgentError, ValidationFailed
from agent_server.webhooks.thresholds import MAX_THRESHOLDS
from http_facade.pages.dashboard.route import DashboardForm, actor_of
from http_facade.pages.dashboard.session import Session
from http_facade.routes import admin_webhooks as json_routes

_SEPARATORS = re.compile(r"[\s,;%]+")


class ThresholdsForm(DashboardForm):
    percents: str = Field(default="", max_length=200)

    def body(self) -> json_routes.Thresholds:
        """The JSON route's body; a word that is not a whole number is a 400 naming the field."""
        words = [word for word in _SEPARATORS.split(self.percents) if word]
        if all(word.isdigit() and len(word) <= 6 for word in words) and len(words) <= MAX_THRESHOLDS:
            return json_routes.Thresholds(percents=[int(word) for word in words])
        raise ValidationFailed(
            f"Write up to {MAX_THRESHOLDS} whole numbers between 1 and 1000, separated by commas "
            "(e.g. 50, 80, 100).",
            param="percents",
        )


async def thresholds_context(
    request: Request,
    session: Session,
    error: AgentError | None = None,
    form: ThresholdsForm | None = None,
) -> dict[str, Any]:
    """What the usage alerts form shows: the percents (as typed, after a refusal), this month's
    tokens and the quota."""
    admin = admin_services(request.app.state.services)
    current = await json_routes.get_thresholds(actor_of(request, session), admin)
    quota = current["monthly_token_quota"]
    used = current["tokens_used_this_month"]
    return {
        "thresholds": current,
        "thresholds_typed": form.percents if form is not None else ", ".join(map(str, current["percents"])),
        "thresholds_share": round(100 * used / quota, 1) if quota else None,
        "thresholds_error": error,
    }
