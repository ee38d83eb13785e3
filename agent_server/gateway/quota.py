"""Monthly token quotas (``monthly_token_quota`` in plans.yaml): a live key over it gets 402, and
so does an OAuth access token of a live deployment (docs/oauth.md: it acts as a key of its tenant).

The quota is soft on purpose. Tokens are counted from the usage rows by a scan every few seconds,
never in the request path: a request costs one dict lookup here, and a tenant can overrun its quota
by what it spends between two scans (documented in docs/gateway.md). Sandbox keys are never
charged, so neither their rows nor their requests count. The month is the calendar month in UTC;
a tenant blocked this month is free again at the start of the next one, scan or not.

Each process scans on its own: new rows since its watermark are added to its running totals, and
the month is summed again from scratch every hour (rows a concurrent transaction committed behind
the watermark are caught then) and when the month changes.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime
from typing import Any

from sqlalchemy import and_, func, or_, select

from agent_server.foundation.clock import Clock
from agent_server.foundation.errors import QuotaExceeded
from agent_server.foundation.timeutil import month_bounds
from agent_server.gateway.auth import TOKEN_KEY_PREFIX, KeyPrincipal
from agent_server.gateway.tables import ApiKey, PlanRecord, Tenant, UsageRecord
from agent_server.storage.db import Database

log = logging.getLogger("agentgate.gateway")
RESYNC_SECONDS = 3600.0


def live_rows(usage: Any, tokens_live: bool) -> Any:
    """The usage rows that count against a quota: a live key's and, in a live deployment, those of
    OAuth access tokens (no API key row: their key_id is the token's). Needs ``ApiKey`` outer-joined."""
    live_key = ApiKey.environment == "live"
    if not tokens_live:
        return live_key
    return or_(live_key, and_(ApiKey.id.is_(None), usage.key_id.startswith(TOKEN_KEY_PREFIX)))  # type: ignore[union-attr]


class QuotaGate:
    def __init__(self, db: Database, clock: Clock, *, tokens_live: bool = False) -> None:
        self.db, self.clock = db, clock
        self.tokens_live = tokens_live  # the deployment's access tokens are live (not sandbox)
        self.blocked: dict[str, tuple[float, int]] = {}  # tenant -> (free again at, quota)
        self._totals: dict[str, int] = {}
        self._month: datetime | None = None
        self._watermark = 0
        self._synced = 0.0

    def check(self, principal: KeyPrincipal) -> None:
        """The hot path: refuse a live key of a tenant that spent its quota this month."""
        entry = self.blocked.get(principal.tenant_id)
        if entry is None or principal.environment != "live" or self.clock.now() >= entry[0]:
            return
        raise QuotaExceeded(
            f"This tenant has used its monthly quota of {entry[1]:,} tokens. It renews on the first "
            "of next month (UTC); upgrade the plan to continue now."
        )

    def used(self, tenant_id: str) -> int:
        return self._totals.get(tenant_id, 0)

    async def scan(self) -> None:
        now = self.clock.now()
        start, following = month_bounds(now)
        if start != self._month or now - self._synced >= RESYNC_SECONDS:
            self._month, self._totals, self._watermark, self._synced = start, {}, 0, now
        table = UsageRecord.__table__.c  # type: ignore[attr-defined]
        spent = select(
            table.tenant_id, func.sum(table.prompt_tokens + table.completion_tokens), func.max(table.id)
        ).outerjoin(ApiKey, ApiKey.id == table.key_id)  # type: ignore[arg-type]
        spent = spent.where(
            table.id > self._watermark, table.created_at >= start, live_rows(table, self.tokens_live)
        ).group_by(table.tenant_id)
        quotas = select(Tenant.id, PlanRecord.monthly_token_quota).join(
            PlanRecord,
            PlanRecord.id == Tenant.plan_id,  # type: ignore[arg-type]
        )
        async with self.db.session() as session:
            rows = (await session.execute(spent)).all()
            limits = {tenant: quota for tenant, quota in (await session.execute(quotas)).all() if quota}
        for tenant, tokens, top in rows:
            self._totals[tenant] = self._totals.get(tenant, 0) + int(tokens or 0)
            self._watermark = max(self._watermark, int(top))
        until = following.timestamp()
        self.blocked = {
            tenant: (until, quota) for tenant, quota in limits.items() if self._totals.get(tenant, 0) >= quota
        }

    async def run(self, every: float) -> None:
        while True:
            try:
                await self.scan()
            except Exception:  # the next scan tries again; the gate keeps its last answer meanwhile
                log.exception("token quota scan failed")
            await asyncio.sleep(every)
