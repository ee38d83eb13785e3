"""Spend summed from the usage rows, for budgets and key views.

A row's cost is in millionths of a minor unit (``cost_micros``); sums count only rows in the
deployment's currency (rows of sandbox keys and unpriced models have none and cost nothing).
Every query names the tenants, so it runs on the ``(tenant_id, created_at)`` index.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import case, func, or_, select

from agent_server.gateway.tables import ApiKey, UsageRecord
from agent_server.storage.db import Database

USAGE = UsageRecord.__table__.c  # type: ignore[attr-defined]
MICROS = 1_000_000  # cost_micros per minor unit


class Spend(NamedTuple):
    tokens: int = 0
    micros: int = 0

    def plus(self, other: Spend) -> Spend:
        return Spend(self.tokens + other.tokens, self.micros + other.micros)

    def merged(self, other: Spend) -> Spend:
        """The larger of two views of one spend (the KV counter runs ahead of the written rows)."""
        return Spend(max(self.tokens, other.tokens), max(self.micros, other.micros))


def minor(micros: int) -> int:
    """Millionths of a minor unit as whole minor units, half up."""
    return (micros + MICROS // 2) // MICROS


def cost_sum(currency: str) -> Any:
    return func.coalesce(func.sum(case((USAGE.currency == currency, USAGE.cost_micros), else_=0)), 0)


@dataclass(frozen=True, slots=True)
class BudgetedKey:
    key_id: str
    tenant_id: str
    period: str
    max_tokens: int | None
    max_spend: int | None


async def budgeted_keys(db: Database, now: datetime) -> list[BudgetedKey]:
    """Every key with a budget not revoked at ``now`` (a rotation's overlap counts; a small set: the
    scan reads it each time)."""
    query = select(
        ApiKey.id, ApiKey.tenant_id, ApiKey.budget_period, ApiKey.budget_tokens, ApiKey.budget_spend
    ).where(
        ApiKey.budget_period.is_not(None),  # type: ignore[union-attr]
        or_(ApiKey.revoked_at.is_(None), ApiKey.revoked_at > now),  # type: ignore[union-attr,operator]
    )
    async with db.session() as session:
        rows = (await session.execute(query)).all()
    return [BudgetedKey(*row) for row in rows]


async def top_usage_id(db: Database) -> int:
    async with db.session() as session:
        return int(await session.scalar(select(func.max(USAGE.id))) or 0)


async def spend_per_key(
    db: Database,
    tenants: Collection[str],
    keys: Collection[str],
    currency: str,
    *,
    since: datetime | None = None,
    after_id: int = 0,
    up_to_id: int | None = None,
) -> dict[str, Spend]:
    """Tokens and cost per key of ``keys``, of rows created at ``since`` or later and with
    ``after_id < id <= up_to_id`` (the scan's incremental window)."""
    if not keys:
        return {}
    tokens = func.coalesce(func.sum(USAGE.prompt_tokens + USAGE.completion_tokens), 0)
    query = (
        select(USAGE.key_id, tokens, cost_sum(currency))
        .where(USAGE.tenant_id.in_(tenants), USAGE.key_id.in_(keys), USAGE.id > after_id)
        .group_by(USAGE.key_id)
    )
    if since is not None:
        query = query.where(USAGE.created_at >= since)
    if up_to_id is not None:
        query = query.where(USAGE.id <= up_to_id)
    async with db.session() as session:
        rows = (await session.execute(query)).all()
    return {key: Spend(int(spent_tokens), int(micros)) for key, spent_tokens, micros in rows}
