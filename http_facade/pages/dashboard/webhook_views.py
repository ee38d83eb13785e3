"""What the webhook pages render: the list (with the registration form and the usage alerts) and a
webhook's own page (its settings, actions and deliveries). The routes are in ``webhooks.py`` and
``webhook_manage.py``; both render a refused form through these, with its error.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Path, Query, Request
from fastapi.responses import HTMLResponse
from pydantic import Field

from agent_server.admin.wiring import admin_services
from agent_server.foundation.errors import AgentError
from agent_server.webhooks.repository import EVENT_TYPES
from http_facade.pages.dashboard.plan_gate import plan_gate
from http_facade.pages.dashboard.route import DashboardForm, actor_of, page
from http_facade.pages.dashboard.session import APP_PATH, Session
from http_facade.pages.dashboard.tenant import tenant_of
from http_facade.pages.dashboard.thresholds import ThresholdsForm, thresholds_context
from http_facade.pages.form_state import FormState
from http_facade.routes import admin_webhooks as json_routes

WEBHOOKS_PAGE = f"{APP_PATH}/webhooks"
Id = Annotated[str, Path(min_length=1, max_length=40, pattern=r"^[A-Za-z0-9_-]+$")]
Notice = Annotated[str, Query(max_length=60, pattern=r"^[A-Za-z0-9_-]*$")]


class WebhookForm(DashboardForm):
    url: str = Field(min_length=8, max_length=2048)
    events: list[str] = Field(default_factory=list, max_length=len(EVENT_TYPES))
    description: str = Field(default="", max_length=200)


async def list_page(
    request: Request,
    session: Session,
    *,
    form: FormState | None = None,
    notice: str = "",
    thresholds_error: AgentError | None = None,
    thresholds_form: ThresholdsForm | None = None,
) -> HTMLResponse:
    """The list with the registration form and the usage alerts (also the answer of a refused form)."""
    admin = admin_services(request.app.state.services)
    actor = actor_of(request, session)
    listed = await json_routes.list_webhooks(actor, admin)
    _, plan = await tenant_of(request, session)
    context = {
        "webhooks": listed["data"],
        "event_types": listed["event_types"],
        "hook_form": (form or FormState.blank(events=listed["event_types"])).at("webhook"),
        "notice": notice,
        "gate": plan_gate(request, plan, "webhooks"),
        **await thresholds_context(request, session, thresholds_error, thresholds_form),
    }
    failed = (form.problem if form else None) or thresholds_error
    return page(
        request, "webhooks.html", context, session=session, status=failed.http_status if failed else 200
    )


NOTICES = {
    "saved": "The changes are saved.",
    "enabled": "The webhook is enabled: events are delivered again.",
    "disabled": "The webhook is disabled: no events are delivered until you enable it.",
    "thresholds": "The usage alerts are saved.",
}


async def webhook_page(
    request: Request,
    session: Session,
    webhook_id: str,
    *,
    notice: str = "",
    error: AgentError | None = None,
    form: FormState | None = None,
    tested: dict[str, Any] | None = None,
) -> HTMLResponse:
    """A webhook: its settings (to change; a refused change keeps what was typed), its actions and
    its 50 newest deliveries."""
    admin, actor = admin_services(request.app.state.services), actor_of(request, session)
    hook = await json_routes.get_webhook(webhook_id, actor, admin)
    deliveries = await json_routes.list_deliveries(webhook_id, actor, admin, limit=50)
    _, plan = await tenant_of(request, session)
    context = {
        "webhook": hook,
        "deliveries": deliveries["data"],
        "event_types": EVENT_TYPES,
        "notice": notice,
        "error": error,
        "hook_form": (form or FormState.blank(**_stored(hook))).at("edit"),
        "tested": tested,
        "gate": plan_gate(request, plan, "webhooks"),
    }
    failed = error or (form.problem if form else None)
    return page(
        request, "webhook.html", context, session=session, status=failed.http_status if failed else 200
    )


def _stored(hook: dict[str, Any]) -> dict[str, Any]:
    """A stored webhook as its settings form shows it."""
    return {"url": hook["url"], "events": hook["events"], "description": hook.get("description") or ""}
