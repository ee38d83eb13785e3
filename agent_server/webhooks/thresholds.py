"""Usage thresholds: ``usage.threshold_reached`` once per tenant, threshold and calendar month (UTC).

A threshold is a percent of the plan's monthly token quota (default 80 and 100, configurable per
tenant). The check is a function over the usage rows, so it needs no hook in the hot path:
``scan`` looks only at tenants with rows newer than its watermark and the delivery worker runs it
every few seconds. A unique row per (tenant, month, percent) makes the event fire once even when
several processes scan at the same moment.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from agent_server.admin.tables import UsageThresholdHitRecord, UsageThresholdRecord
from agent_server.foundation.clock import Clock
from agent_server.foundation.errors import ValidationFailed
from agent_server.foundation.events import EventBus
from agent_server.foundation.timeutil import month_bounds, utc
from agent_server.gateway.tables import PlanRecord, Tenant, UsageRecord
from agent_server.storage.db import Database
from agent_server.webhooks.dispatcher import UsageThresholdReached

DEFAULT_PERCENTS = (80, 100)
MAX_THRESHOLDS = 10


class ThresholdMonitor:
    def __init__(self, db: Database, clock: Clock, bus: EventBus) -> None:
        self.db, self.clock, self.bus = db, clock, bus
        self._watermark = 0  # highest usage row id already looked at by this process

    async def get(self, tenant_id: str) -> list[int]:
        async with self.db.session() as session:
            record = await session.get(UsageThresholdRecord, tenant_id)
        return list(record.percents) if record else list(DEFAULT_PERCENTS)

    async def set(self, tenant_id: str, percents: Sequence[int]) -> list[int]:
        clean = sorted(set(percents))
        if len(clean) > MAX_THRESHOLDS or any(not 1 <= p <= 1000 for p in clean):
            raise ValidationFailed(
                f"percents: at most {MAX_THRESHOLDS} integers between 1 and 1000.", param="percents"
            )
        async with self.db.session() as session:
            await session.merge(
                UsageThresholdRecord(tenant_id=tenant_id, percents=clean, updated_at=utc(self.clock.now()))
            )
        return clean

    async def usage(self, tenant_id: str) -> tuple[int, int | None]:
        """(tokens used this month, the plan's monthly quota or None when unlimited)."""
        start, _ = month_bounds(self.clock.now())
        async with self.db.session() as session:
            quota = await session.scalar(
                select(PlanRecord.monthly_token_quota)
                .join(Tenant, Tenant.plan_id == PlanRecord.id)  # type: ignore[arg-type]
                .where(Tenant.id == tenant_id)
            )
            used = await session.scalar(
                select(
                    func.coalesce(func.sum(UsageRecord.prompt_tokens + UsageRecord.completion_tokens), 0)
                ).where(UsageRecord.tenant_id == tenant_id, UsageRecord.created_at >= start)
            )
        return int(used or 0), quota

    async def check(self, tenant_id: str) -> list[int]:
        """Announce every threshold the tenant's usage has reached and not yet announced this month."""
        used, quota = await self.usage(tenant_id)
        if not quota:
            return []
        month = utc(self.clock.now()).strftime("%Y-%m")
        announced = []
        for percent in await self.get(tenant_id):
            if used * 100 < percent * quota:
                continue
            try:
                async with self.db.session() as session:
                    session.add(
                        UsageThresholdHitRecord(
                            tenant_id=tenant_id, month=month, percent=percent, at=utc(self.clock.now())
                        )
                    )
            except IntegrityError:
                continue  # already announced (by this or another process)
            announced.append(percent)
            await self.bus.publish(
                UsageThresholdReached(
                    tenant_id=tenant_id,
                    occurred_at=self.clock.now(),
                    percent=percent,
                    month=month,
                    tokens_used=used,
                    monthly_quota=quota,
                )
            )
        return announced

    async def scan(self) -> int:
        """Check the tenants with usage rows newer than the watermark; returns events emitted."""
        start, _ = month_bounds(self.clock.now())
        async with self.db.session() as session:
            top = await session.scalar(select(func.max(UsageRecord.id)))
            if not top or top <= self._watermark:
                return 0
            tenants = list(
                (
                    await session.execute(
                        select(UsageRecord.tenant_id)
                        .where(UsageRecord.id > self._watermark, UsageRecord.id <= top)  # type: ignore[operator]
                        .where(UsageRecord.created_at >= start)
                        .distinct()
                    )
                ).scalars()
            )
        emitted = 0
        for tenant_id in tenants:
            emitted += len(await self.check(tenant_id))
        self._watermark = top
        return emitted
