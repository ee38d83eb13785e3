"""The month so far against the plan: what ``GET /admin/usage`` and the dashboard show as
``month_to_date``.

The month is the calendar month in UTC, as the token quota's (quota.py). Its quota counts what the
quota gate counts: the tokens of live keys and, in a live deployment, of OAuth access tokens
(sandbox keys are never charged). The gate enforces from
its own running totals, a scan behind; this reads the rows, so it is the exact figure. The cost is
what live keys' requests cost (sandbox rows cost nothing), billed in addition to the plan's price
(docs/billing.md).
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import select

from agent_server.billing.money import to_minor
from agent_server.foundation.timeutil import iso, month_bounds
from agent_server.gateway.quota import live_rows
from agent_server.gateway.spend import USAGE
from agent_server.gateway.tables import ApiKey, PlanRecord, Tenant, UsageRecord
from agent_server.gateway.usage_totals import Totals, sum_columns

if TYPE_CHECKING:
    from agent_server.gateway.service import Gateway


async def month_to_date(gateway: Gateway, tenant_id: str) -> dict[str, Any]:
    await gateway.usage.flush()  # what the writer still holds counts too
    currency = gateway.models.currency
    start, following = month_bounds(gateway.clock.now())
    rows_with_keys = UsageRecord.__table__.outerjoin(ApiKey, ApiKey.id == USAGE.key_id)  # type: ignore[attr-defined]
    live = live_rows(USAGE, gateway.quota.tokens_live).label("live")
    spent = (
        select(live, *sum_columns(currency))
        .select_from(rows_with_keys)
        .where(USAGE.tenant_id == tenant_id, USAGE.created_at >= start, USAGE.created_at < following)
        .group_by(live)
    )
    plan_of = (
        select(PlanRecord.id, PlanRecord.name, PlanRecord.monthly_token_quota)
        .join(Tenant, Tenant.plan_id == PlanRecord.id)  # type: ignore[arg-type]
        .where(Tenant.id == tenant_id)
    )
    async with gateway.db.session() as session:
        rows = (await session.execute(spent)).all()
        plan = (await session.execute(plan_of)).first()
    month, charged = Totals(), Totals()
    for row in rows:
        month.add(Totals.of(row))
        if row.live:
            charged.add(Totals.of(row))
    quota = plan.monthly_token_quota if plan is not None else None
    return {
        "start": str(start.date()),
        "end": str((following - timedelta(days=1)).date()),
        "renews_at": iso(following),
        **month.view(currency),
        "quota": {
            "monthly_tokens": quota,
            "used": charged.total_tokens,
            "remaining": None if quota is None else max(quota - charged.total_tokens, 0),
            "percent": None if not quota else round(100 * charged.total_tokens / quota, 1),
        },
        "plan": _plan(gateway, plan),
    }


def _plan(gateway: Gateway, record: Any) -> dict[str, Any] | None:
    """The plan's id, name and list price (``None``: priced by contract)."""
    if record is None:
        return None
    offered = next((p for p in gateway.services.knowledge.pack.plans if p.id == record.id), None)
    price = None
    if offered is not None and offered.price_monthly is not None:
        price = {
            "amount_minor": to_minor(offered.price_monthly, offered.currency),
            "currency": offered.currency,
            "interval": "month",
        }
    return {"id": record.id, "name": record.name, "price": price}
