"""What the key pages share: paths, a key as the pages show it (with its status) and the context of
the settings form (``partials/key_fields.html``)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Path, Request

from agent_server.foundation.errors import AgentError
from agent_server.gateway.key_admin import is_live
from agent_server.gateway.plans import PlanInfo
from agent_server.gateway.tables import ApiKey, unix
from http_facade.pages.dashboard import key_forms
from http_facade.pages.dashboard.session import APP_PATH
from http_facade.pages.form_state import FormState
from http_facade.routes.admin_keys import view

KEYS_PAGE = f"{APP_PATH}/keys"
KeyId = Annotated[str, Path(min_length=1, max_length=40, pattern=r"^[A-Za-z0-9_-]+$")]


def status_of(record: ApiKey, now: float) -> str:
    """active, retiring (a rotation's overlap), expired, replaced or revoked."""
    if record.revoked_at is not None:
        if unix(record.revoked_at) > now:
            return "retiring"
        return "replaced" if record.replaced_by else "revoked"
    return "active" if is_live(record, now) else "expired"


def shown(record: ApiKey, now: float) -> dict[str, Any]:
    return {**view(record), "status": status_of(record, now)}


def model_choices(request: Request, plan: PlanInfo, chosen: list[str]) -> list[str]:
    """The plan's models from the one model table (what the allow-list may pick), then entries of the
    key's list the table does not name (patterns set through the API), so saving keeps them."""
    table = request.app.state.gateway.models
    offered = [model for model in table.entries if plan.grant.allows(model)]
    return offered + [entry for entry in dict.fromkeys(chosen) if entry not in offered]


def form_context(
    request: Request, plan: PlanInfo, values: dict[str, Any], error: AgentError | None
) -> dict[str, Any]:
    """What ``partials/key_fields.html`` needs: the values, the choices, and the ``form`` state that
    places the refusal's message next to its field (ids ``key-…``)."""
    field = key_forms.field_of(error) if error is not None else None
    form = FormState(problem=error, prefix="key")
    if field and error is not None:
        form.errors[field] = error.message
    return {
        "values": values,
        "scopes": sorted(plan.scopes),
        "model_choices": model_choices(request, plan, values["models"]),
        "periods": key_forms.PERIODS,
        "currency": request.app.state.gateway.models.currency,
        "form": form,
    }
