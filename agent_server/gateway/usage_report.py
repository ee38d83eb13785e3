"""The usage API's report (``GET /admin/usage``): requests, tokens, errors, latency and spend of one
tenant per key and model, in total or per UTC day, optionally between two days.

Spend is the sum of the rows' costs in the deployment's currency: ``cost_micros`` exactly (millionths
of a minor unit) and ``cost`` in whole minor units, half up.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from sqlalchemy import case, func, select

from agent_server.gateway.spend import USAGE, cost_sum, minor
from agent_server.storage.db import Database


async def report(
    db: Database,
    tenant_id: str,
    currency: str,
    *,
    by_day: bool = False,
    since: date | None = None,
    until: date | None = None,
) -> list[dict[str, Any]]:
    """Rows per key and model (and day), ordered by key, model (and day); ``until`` is inclusive."""
    day = func.date(USAGE.created_at)  # the UTC date: PostgreSQL sessions run in UTC, SQLite stores UTC
    groups = [USAGE.key_id, USAGE.model, *([day] if by_day else [])]
    query = (
        select(
            *groups,
            func.count().label("requests"),
            func.coalesce(func.sum(USAGE.prompt_tokens), 0).label("prompt_tokens"),
            func.coalesce(func.sum(USAGE.completion_tokens), 0).label("completion_tokens"),
            func.sum(case((USAGE.status >= 400, 1), else_=0)).label("errors"),
            func.avg(USAGE.latency_ms).label("avg_latency_ms"),
            cost_sum(currency).label("cost_micros"),
        )
        .where(USAGE.tenant_id == tenant_id)
        .group_by(*groups)
        .order_by(*groups)
    )
    if since is not None:
        query = query.where(USAGE.created_at >= _midnight(since))
    if until is not None:
        query = query.where(USAGE.created_at < _midnight(until + timedelta(days=1)))
    async with db.session() as session:
        rows = (await session.execute(query)).all()
    return [_row(row, currency, by_day) for row in rows]


def _midnight(value: date) -> datetime:
    return datetime.combine(value, time(), UTC)


def _row(row: Any, currency: str, by_day: bool) -> dict[str, Any]:
    micros = int(row.cost_micros)
    body: dict[str, Any] = {"key_id": row.key_id, "model": row.model}
    if by_day:
        body["day"] = str(row[2])  # a date on PostgreSQL, text on SQLite
    body.update(
        requests=int(row.requests),
        prompt_tokens=int(row.prompt_tokens),
        completion_tokens=int(row.completion_tokens),
        total_tokens=int(row.prompt_tokens) + int(row.completion_tokens),
        errors=int(row.errors or 0),
        avg_latency_ms=round(float(row.avg_latency_ms or 0.0), 2),
        cost=minor(micros),
        cost_micros=micros,
        currency=currency,
    )
    return body
