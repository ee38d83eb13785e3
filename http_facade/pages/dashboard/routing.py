"""The LLM routing table for platform admins: the services of ``/admin/llm-routing/``.

The page shows the table at a revision (its ETag); each model's form carries that revision, so an
edit made meanwhile by someone else is refused (409 ``revision_mismatch``) instead of overwritten,
exactly like ``PATCH`` with ``If-Match``.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Form, Request
from fastapi.responses import HTMLResponse, Response
from pydantic import Field

from agent_server.admin import routing
from agent_server.foundation.errors import AgentError, PermissionDenied, ValidationFailed
from http_facade.pages.dashboard.audit_trail import audited
from http_facade.pages.dashboard.route import (
    DashboardForm,
    SessionDep,
    checked,
    dashboard_router,
    page,
    responses,
    see_other,
)
from http_facade.pages.dashboard.session import APP_PATH, Session

router = dashboard_router()
ROUTING_PAGE = f"{APP_PATH}/routing"


class RouteForm(DashboardForm):
    """One model's route: a row per backend; a backend without a weight is not used (none: removed)."""

    revision: int = Field(ge=0)
    model: str = Field(min_length=1, max_length=200)
    backend: list[str] = Field(default_factory=list, max_length=50)
    weight: list[str] = Field(default_factory=list, max_length=50)
    priority: list[str] = Field(default_factory=list, max_length=50)


def _platform_only(session: Session) -> None:
    if not session.platform:
        raise PermissionDenied("The LLM routing table is for platform administrators (platform:admin).")


def _entries(form: RouteForm) -> list[dict[str, Any]] | None:
    """The rows with a weight as route entries (``routing.validate`` checks them); none removes."""
    entries = []
    for backend, weight, priority in zip(form.backend, form.weight, form.priority, strict=False):
        if not weight.strip():
            continue
        try:
            entries.append({"backend": backend, "weight": float(weight), "priority": int(priority or 0)})
        except ValueError:
            raise ValidationFailed(
                f"The weight and priority of {backend} must be numbers.", param="weight"
            ) from None
    return entries or None


async def _page(
    request: Request, session: Session, *, error: AgentError | None = None, notice: str = ""
) -> HTMLResponse:
    services = request.app.state.services
    backends = list(routing.router_of(services).backends)
    view = routing.table_view(await routing.current(services), backends)
    forms = [
        {
            "model": model,
            "weights": {e["backend"]: e["weight"] for e in entries},
            "priorities": {e["backend"]: e["priority"] for e in entries},
        }
        for model, entries in view["routes"].items()
    ]
    context = {
        "table": view,
        "forms": [*forms, {"model": "", "weights": {}, "priorities": {}}],  # the last adds a model
        "etag": routing.etag(view["revision"]),
        "error": error,
        "notice": notice,
    }
    return page(request, "routing.html", context, session=session, status=error.http_status if error else 200)


@router.get(ROUTING_PAGE, summary="Dashboard: the LLM routing table (platform admins)", responses=responses())
async def routing_page(request: Request, session: SessionDep, saved: str = "") -> HTMLResponse:
    _platform_only(session)
    return await _page(request, session, notice=f"The route of {saved} is saved."[:240] if saved else "")


@router.post(
    ROUTING_PAGE,
    summary="Dashboard: change one model's route at the revision shown (platform admins)",
    responses=responses(409),
)
async def change_route(request: Request, form: Annotated[RouteForm, Form()], session: SessionDep) -> Response:
    checked(request, form)
    _platform_only(session)
    services = request.app.state.services
    details: dict[str, Any] = {"models": [form.model]}
    try:
        async with audited(request, session.user_id, session.tenant_id, "llm_routing.patch", details=details):
            table = await routing.patch(services, {form.model: _entries(form)}, form.revision)
            details["revision"] = table.revision
    except AgentError as err:
        return await _page(request, session, error=err)
    return see_other(f"{ROUTING_PAGE}?saved={form.model}")
