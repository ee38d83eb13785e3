"""The platform's tenants, for platform admins: search by name or id, filter by plan, each with its
plan, standing and trial end; and a form that creates a tenant (inviting its first admin), as
``GET``/``POST /admin/platform/tenants`` do (``agent_server/admin/tenant_directory.py``).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Form, Query, Request
from fastapi.responses import HTMLResponse, Response
from pydantic import Field, ValidationError

from agent_server.admin.tenant_directory import MAX_SEARCH, create_tenant, find_tenants
from agent_server.billing.engine import STANDING_GATE
from agent_server.foundation.errors import AgentError, PermissionDenied, ValidationFailed
from agent_server.gateway.plans import subscription_plans
from http_facade.pages.dashboard.audit_trail import record
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
from http_facade.routes.admin_platform import TenantCreate, entry_view

router = dashboard_router()
TENANTS_PAGE = f"{APP_PATH}/tenants"
PAGE_SIZE = 50
# A standing's state as people read it, and how it looks (ok, warn, bad).
STANDINGS = {
    "trial": ("In trial", "warn"),
    "active": ("Active", "ok"),
    "contract": ("By contract", "ok"),
    "grace": ("Payment failed, in grace", "warn"),
    "trial_ended": ("Trial ended", "bad"),
    "payment_overdue": ("Payment overdue", "bad"),
    "subscription_ended": ("Subscription ended", "bad"),
}


class TenantForm(DashboardForm):
    """The form's fields as text (an empty one: not given); ``_request`` checks them as the JSON route
    checks its body (``TenantCreate``)."""

    name: str = Field(min_length=2, max_length=200)
    plan_id: str = Field(min_length=1, max_length=40)
    admin_email: str = Field(default="", max_length=320, description="Empty: nobody is invited.")
    rate_limit_per_minute: str = Field(
        default="", max_length=7, pattern=r"^\d*$", description="Empty: the plan's."
    )


def _request(form: TenantForm) -> TenantCreate:
    fields = {"name": form.name, "plan_id": form.plan_id}
    if form.admin_email.strip():
        fields["admin_email"] = form.admin_email.strip()
    if form.rate_limit_per_minute:
        fields["rate_limit_per_minute"] = form.rate_limit_per_minute
    try:
        return TenantCreate.model_validate(fields)
    except ValidationError as exc:
        error = exc.errors()[0]
        field = str(error["loc"][0]) if error["loc"] else "body"
        raise ValidationFailed(f"{field}: {error['msg']}", param=field) from None


def _platform_only(session: Session) -> None:
    if not session.platform:
        raise PermissionDenied("The list of tenants is for platform administrators (platform:admin).")


def _plans(request: Request) -> list[tuple[str, str]]:
    """(id, name) of every plan an organisation may be on, in the content pack's order."""
    return [
        (plan.id, plan.name) for plan in subscription_plans(request.app.state.services.knowledge.pack.plans)
    ]


async def _page(
    request: Request,
    session: Session,
    *,
    search: str = "",
    plan_id: str = "",
    offset: int = 0,
    created: str = "",
    error: AgentError | None = None,
    form: TenantForm | None = None,
) -> HTMLResponse:
    services = request.app.state.services
    gate = services.extras[STANDING_GATE]
    total, entries = await find_tenants(
        services.db, gate, search=search, plan_id=plan_id or None, limit=PAGE_SIZE, offset=offset
    )
    new = None
    if created:
        found = (await find_tenants(services.db, gate, search=created, limit=1))[1]
        new = entry_view(found[0], request) if found and found[0].tenant.id == created else None
    context: dict[str, Any] = {
        "tenants": [entry_view(entry, request) for entry in entries],
        "total": total,
        "search": search,
        "plan_id": plan_id,
        "offset": offset,
        "page_size": PAGE_SIZE,
        "plans": _plans(request),
        "plan_names": dict(_plans(request)),
        "standings": STANDINGS,
        "created": new,
        "error": error,
        "form": form,
    }
    return page(request, "tenants.html", context, session=session, status=error.http_status if error else 200)


@router.get(
    TENANTS_PAGE,
    summary="Dashboard: the platform's tenants, searched by name or id and filtered by plan (platform admins)",
    responses=responses(),
)
async def tenants_page(
    request: Request,
    session: SessionDep,
    q: Annotated[
        str, Query(max_length=MAX_SEARCH, description="A part of the name or the start of the id.")
    ] = "",
    plan: Annotated[str, Query(max_length=40, description="Only tenants on this plan.")] = "",
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
    created: Annotated[str, Query(max_length=40, description="The tenant just created, to confirm.")] = "",
) -> HTMLResponse:
    _platform_only(session)
    return await _page(request, session, search=q, plan_id=plan, offset=offset, created=created)


@router.post(
    TENANTS_PAGE,
    summary="Dashboard: create a tenant, optionally inviting its first admin (platform admins)",
    responses=responses(409),
)
async def create(request: Request, form: Annotated[TenantForm, Form()], session: SessionDep) -> Response:
    checked(request, form)
    _platform_only(session)
    services = request.app.state.services
    try:
        body = _request(form)
        tenant, invited = await create_tenant(
            services.db,
            services.clock,
            request.app.state.accounts,
            name=body.name,
            plan_id=body.plan_id,
            rate_limit=body.rate_limit_per_minute,
            admin_email=None if body.admin_email is None else str(body.admin_email),
        )
    except AgentError as err:
        note = {"plan": form.plan_id, "by_tenant": session.tenant_id}
        await record(request, actor=session.user_id, tenant_id=session.tenant_id,
                     action="platform.tenant.create", status=err.http_status, details=note)  # fmt: skip
        return await _page(request, session, error=err, form=form)
    # Recorded under the new tenant, as the JSON route records it, so its admins see who made it.
    details = {"plan": tenant.plan_id, "invited": invited is not None, "by_tenant": session.tenant_id}
    await record(request, actor=session.user_id, tenant_id=tenant.id, action="platform.tenant.create",
                 target=tenant.id, details=details)  # fmt: skip
    return see_other(f"{TENANTS_PAGE}?created={tenant.id}")
