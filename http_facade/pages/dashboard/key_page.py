"""``/app/keys/{key_id}``: one key with its settings (changed as ``PATCH /admin/api-keys/{key_id}``
changes them, through ``KeyAdmin.update``), its spend against its budget, its requests this month
(the usage report's rows of the key) and its latest requests.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Form, Request
from fastapi.responses import HTMLResponse, Response

from agent_server.billing.money import decimal_text
from agent_server.foundation.errors import AgentError
from agent_server.foundation.timeutil import month_bounds
from agent_server.gateway.key_activity import recent_requests
from agent_server.gateway.repository import find_key
from agent_server.gateway.tables import ApiKey
from agent_server.gateway.usage_range import UsagePeriod
from agent_server.gateway.usage_report import cells
from agent_server.gateway.usage_totals import Totals
from http_facade.pages.dashboard import key_forms
from http_facade.pages.dashboard.audit_trail import audited
from http_facade.pages.dashboard.key_forms import KeyForm
from http_facade.pages.dashboard.key_views import KEYS_PAGE, KeyId, form_context, shown
from http_facade.pages.dashboard.route import (
    SessionDep,
    checked,
    dashboard_router,
    page,
    responses,
    see_other,
)
from http_facade.pages.dashboard.session import Session
from http_facade.pages.dashboard.tenant import tenant_of
from http_facade.pages.money import spend_text

router = dashboard_router()
LOGS_PAGE = "/app/logs"  # the request log, where it is installed: linked with ?key=<id>
EDITABLE = {"active", "expired"}  # what PATCH accepts: keys not revoked (nor retiring)


def budget_view(record: ApiKey, spend: dict[str, Any], currency: str) -> dict[str, Any] | None:
    """The budget's limits against what its current period spent, as text and as fractions."""
    if record.budget_period is None:
        return None
    limits = []
    if record.budget_spend is not None:
        limit_micros = record.budget_spend * 1_000_000
        limits.append(
            {
                "what": "money",
                "spent": spend_text(spend["cost_micros"], currency),
                "limit": f"{decimal_text(record.budget_spend, currency)} {currency}",
                "value": min(spend["cost_micros"], limit_micros),
                "max": limit_micros,
                "percent": round(100 * spend["cost_micros"] / limit_micros),
            }
        )
    if record.budget_tokens is not None:
        limits.append(
            {
                "what": "tokens",
                "spent": f"{spend['tokens']:,} tokens",
                "limit": f"{record.budget_tokens:,} tokens",
                "value": min(spend["tokens"], record.budget_tokens),
                "max": record.budget_tokens,
                "percent": round(100 * spend["tokens"] / record.budget_tokens),
            }
        )
    period = dict(key_forms.PERIODS)[record.budget_period]
    return {"period": period, "limits": limits}


def logs_installed(request: Request) -> bool:
    return any(getattr(route, "path", None) == LOGS_PAGE for route in request.app.routes)


async def _key_page(
    request: Request,
    session: Session,
    key_id: str,
    *,
    values: dict[str, Any] | None = None,
    error: AgentError | None = None,
    notice: str = "",
) -> HTMLResponse:
    _, plan = await tenant_of(request, session)
    gateway = request.app.state.gateway
    await gateway.usage.flush()  # what this process still holds counts in the figures
    record = await find_key(gateway.db, session.tenant_id, key_id)
    now, currency = gateway.clock.now(), gateway.models.currency
    month_start, _ = month_bounds(now)
    spend = (await gateway.key_admin.spend(session.tenant_id, [record]))[record.id]
    found = await cells(gateway.db, session.tenant_id, currency, UsagePeriod(month_start.date(), None))
    totals = Totals()
    for cell in found:
        if cell.key_id == record.id:
            totals.add(cell.totals)
    month = {
        "requests": totals.requests,
        "errors": totals.errors,
        "tokens": totals.total_tokens,
        "cost": spend_text(totals.cost_micros, currency),
        "start": month_start,
    }
    key = shown(record, now)
    context = {
        "key": key,
        "month": month,
        "budget": budget_view(record, spend, currency),
        "recent": await recent_requests(gateway.db, session.tenant_id, record.id, month_start),
        "amount": spend_text,
        "logs_url": f"{LOGS_PAGE}?key={record.id}" if logs_installed(request) else None,
        "editable": key["status"] in EDITABLE,
        "notice": notice,
        **form_context(request, plan, values or key_forms.values_of(record, currency), error),
    }
    status = error.http_status if error else 200
    return page(request, "key.html", context, session=session, status=status)


@router.get(
    f"{KEYS_PAGE}/{{key_id}}",
    summary="Dashboard: one API key, its settings, spend and requests",
    responses=responses(404),
)
async def key_page(request: Request, key_id: KeyId, session: SessionDep, saved: bool = False) -> HTMLResponse:
    return await _key_page(request, session, key_id, notice="The key's settings are saved." if saved else "")


@router.post(
    f"{KEYS_PAGE}/{{key_id}}",
    summary="Dashboard: change an API key's name, scopes, models, budget, expiry or metadata",
    responses=responses(404),
)
async def save_key(
    request: Request, key_id: KeyId, form: Annotated[KeyForm, Form()], session: SessionDep
) -> Response:
    checked(request, form)
    gateway = request.app.state.gateway
    record = await find_key(gateway.db, session.tenant_id, key_id)
    try:
        async with audited(
            request, session.user_id, session.tenant_id, "api_key.update", target=key_id
        ) as note:
            change = key_forms.changes(form, record, gateway.models.currency, gateway.clock.now())
            note["details"]["fields"] = sorted(change.options.model_fields_set | _named(change))
            await gateway.usage.flush()  # a new budget counts the rows written so far
            await gateway.key_admin.update(
                session.tenant_id, key_id, name=change.name, scopes=change.scopes, options=change.options
            )
    except AgentError as err:
        if err.http_status == 404:
            raise
        return await _key_page(request, session, key_id, values=key_forms.submitted(form), error=err)
    return see_other(f"{KEYS_PAGE}/{key_id}?saved=1")


def _named(change: key_forms.Change) -> set[str]:
    """Name and scopes, where the form changes them (for the audit entry's fields)."""
    return {name for name, value in (("name", change.name), ("scopes", change.scopes)) if value is not None}
