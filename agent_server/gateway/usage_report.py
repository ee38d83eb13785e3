"""The usage API's report (``GET /admin/usage``), which the dashboard's usage page shows too.

One query sums a tenant's usage rows per key, model and UTC day within the period; everything else
is added up from those cells: the rows of ``data`` (per key and model, or per key, model and day),
the period's totals, and the splits by day (days with requests only), by model and by key (with
the key's name). The month so far against the plan is ``usage_month.month_to_date``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy import func, select

from agent_server.gateway.spend import USAGE
from agent_server.gateway.tables import ApiKey
from agent_server.gateway.usage_month import month_to_date
from agent_server.gateway.usage_range import UsagePeriod
from agent_server.gateway.usage_totals import Totals, sum_columns
from agent_server.storage.db import Database

if TYPE_CHECKING:
    from agent_server.gateway.service import Gateway

K = TypeVar("K")


@dataclass(frozen=True, slots=True)
class Cell:
    key_id: str
    model: str
    day: str  # YYYY-MM-DD (UTC)
    totals: Totals


async def cells(db: Database, tenant_id: str, currency: str, period: UsagePeriod) -> list[Cell]:
    """The tenant's usage per key, model and day, ordered so."""
    day = func.date(USAGE.created_at)  # the UTC date: PostgreSQL sessions run in UTC, SQLite stores UTC
    groups = [USAGE.key_id, USAGE.model, day]
    query = (
        select(*groups, *sum_columns(currency))
        .where(USAGE.tenant_id == tenant_id)
        .group_by(*groups)
        .order_by(*groups)
    )
    since, until = period.since(), period.until()
    if since is not None:
        query = query.where(USAGE.created_at >= since)
    if until is not None:
        query = query.where(USAGE.created_at < until)
    async with db.session() as session:
        rows = (await session.execute(query)).all()
    # row[2] is a date on PostgreSQL and text on SQLite.
    return [Cell(row.key_id, row.model, str(row[2]), Totals.of(row)) for row in rows]


def _sum_by(found: Iterable[Cell], key: Callable[[Cell], K]) -> dict[K, Totals]:
    sums: dict[K, Totals] = defaultdict(Totals)
    for cell in found:
        sums[key(cell)].add(cell.totals)
    return dict(sums)


async def key_names(db: Database, tenant_id: str, key_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
    """Name, redacted form, environment and status of the tenant's keys among ``key_ids``."""
    ids = sorted(set(key_ids))
    if not ids:
        return {}
    query = select(ApiKey).where(ApiKey.tenant_id == tenant_id, ApiKey.id.in_(ids))  # type: ignore[attr-defined]
    async with db.session() as session:
        records = (await session.execute(query)).scalars().all()
    return {
        record.id: {
            "name": record.name,
            "redacted": f"{record.prefix}…{record.last4}",
            "environment": record.environment,
            "status": "active" if record.revoked_at is None else "revoked",
        }
        for record in records
    }


_NO_KEY = {"name": None, "redacted": None, "environment": None, "status": "deleted"}


def _busiest(sums: dict[Any, Totals]) -> list[tuple[Any, Totals]]:
    """Most tokens first, then most requests, then by name: the order of a chart's bars."""
    return sorted(sums.items(), key=lambda item: (-item[1].total_tokens, -item[1].requests, str(item[0])))


async def usage_report(
    gateway: Gateway, tenant_id: str, period: UsagePeriod, *, by_day: bool = False
) -> dict[str, Any]:
    """The body of ``GET /admin/usage``: ``data`` rows per key and model (and day with ``by_day``),
    the period's ``totals``, ``by_day``, ``by_model``, ``by_key`` and ``month_to_date``."""
    await gateway.usage.flush()  # include what the writer still holds, so the report is current
    currency = gateway.models.currency
    found = await cells(gateway.db, tenant_id, currency, period)
    if by_day:
        data = [
            {"key_id": c.key_id, "model": c.model, "day": c.day, **c.totals.view(currency)} for c in found
        ]
    else:
        pairs = _sum_by(found, lambda c: (c.key_id, c.model))
        data = [{"key_id": k, "model": m, **t.view(currency)} for (k, m), t in sorted(pairs.items())]
    per_key = _sum_by(found, lambda c: c.key_id)
    names = await key_names(gateway.db, tenant_id, per_key)
    return {
        "object": "list",
        "tenant_id": tenant_id,
        "currency": currency,
        "start": None if period.start is None else str(period.start),
        "end": None if period.end is None else str(period.end),
        "data": data,
        "totals": _sum_by(found, lambda c: "").get("", Totals()).view(currency),
        "by_day": [
            {"day": d, **t.view(currency)} for d, t in sorted(_sum_by(found, lambda c: c.day).items())
        ],
        "by_model": [
            {"model": m, **t.view(currency)} for m, t in _busiest(_sum_by(found, lambda c: c.model))
        ],
        "by_key": [{"key_id": k, **names.get(k, _NO_KEY), **t.view(currency)} for k, t in _busiest(per_key)],
        "month_to_date": await month_to_date(gateway, tenant_id),
    }


async def has_usage(db: Database, tenant_id: str) -> bool:
    """Whether the tenant ever made a request (its first-request help can go then)."""
    async with db.session() as session:
        found = await session.scalar(select(USAGE.id).where(USAGE.tenant_id == tenant_id).limit(1))
    return found is not None
