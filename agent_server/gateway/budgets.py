"""Per-key budgets: tokens and/or money per UTC day, per UTC month or in total.

The request path never queries the database for them:

- ``check`` (``Gateway.admit``, keys with a budget only) reads the key's counter of each limited
  quantity from the KV: one GET each, shared by every process through Redis when configured.
- ``add`` (``Gateway.record``) adds the request's tokens and cost with an atomic ``KV.incr``.
- ``scan`` (every ``quota_check_seconds``, like the quota scan) sums the usage rows of budgeted
  keys, incrementally past a watermark and from scratch every hour or when a budget or its period
  changes. It raises a counter that is below what the rows say (a KV that restarted or lost a
  write, a budget set on a key that had already spent), and keeps a per-process list of keys over
  budget by the rows alone, which still holds when the KV is unreachable.

A key is refused once its spend has reached the budget, so the request that crosses the budget
completes (a request's cost is known only at its end) and the next ones get 402 ``budget_exceeded``.
"""

from __future__ import annotations

import asyncio
import logging
import math
from dataclasses import dataclass
from datetime import timedelta

from agent_server.foundation.clock import Clock
from agent_server.foundation.errors import QuotaExceeded
from agent_server.foundation.timeutil import iso, month_bounds, utc
from agent_server.gateway.model_table import format_money
from agent_server.gateway.spend import MICROS, BudgetedKey, Spend, budgeted_keys, spend_per_key, top_usage_id
from agent_server.storage.db import Database
from agent_server.storage.kv import KV

log = logging.getLogger("agentgate.gateway")
DAY = 86_400.0
RESYNC_SECONDS = 3600.0
SCAN_LOCK = "budget:scan-lock"
LOCK_TTL = 30.0  # only while one process raises counters; released at once
PERIOD_WORDS = {"day": "daily", "month": "monthly", "total": "total"}


@dataclass(frozen=True, slots=True)
class Budget:
    period: str  # day, month or total
    max_tokens: int | None
    max_spend: int | None  # minor units of the price currency

    def over(self, spent: Spend) -> bool:
        if self.max_tokens is not None and spent.tokens >= self.max_tokens:
            return True
        return self.max_spend is not None and spent.micros >= self.max_spend * MICROS


def budget_of(period: str | None, max_tokens: int | None, max_spend: int | None) -> Budget | None:
    return None if period is None else Budget(period, max_tokens, max_spend)


def period_bounds(period: str, now: float) -> tuple[float, float | None]:
    """Start and end (Unix seconds, UTC) of the period containing ``now``; total: (0, None)."""
    if period == "total":
        return 0.0, None
    if period == "day":
        start = utc(now).replace(hour=0, minute=0, second=0, microsecond=0)
        return start.timestamp(), (start + timedelta(days=1)).timestamp()
    first, following = month_bounds(now)
    return first.timestamp(), following.timestamp()


class BudgetLedger:
    def __init__(self, kv: KV, db: Database, clock: Clock, currency: str) -> None:
        self.kv, self.db, self.clock, self.currency = kv, db, clock, currency
        self.blocked: dict[str, tuple[float, Budget]] = {}  # by the rows: key -> (until, budget)
        self._totals: dict[tuple[str, float], Spend] = {}  # (key, period start) -> spend in rows
        self._watermark = 0
        self._synced = -math.inf
        self._scanning = asyncio.Lock()  # the periodic scan and one an admin change asks for

    def _counters(self, key_id: str, budget: Budget, now: float) -> tuple[str, str, float | None]:
        start, end = period_bounds(budget.period, now)
        base = f"budget:{key_id}:{int(start)}"
        ttl = None if end is None else end - now + DAY  # outlives its period a day, for views
        return base + ":tokens", base + ":micros", ttl

    # -- the request path ------------------------------------------------------------------------

    async def check(self, key_id: str, budget: Budget) -> None:
        """402 ``budget_exceeded`` when the key's spend this period has reached its budget."""
        now = self.clock.now()
        entry = self.blocked.get(key_id)
        if entry is not None and now < entry[0] and entry[1] == budget:
            raise self.refusal(budget, now)
        try:
            spent = await self.counted(key_id, budget, now)
        except Exception as exc:  # the KV is away: the rows' verdict above still applies
            log.warning("budget counter of %s unreadable (%s); allowed", key_id, type(exc).__name__)
            return
        if budget.over(spent):
            raise self.refusal(budget, now)

    async def counted(self, key_id: str, budget: Budget, now: float) -> Spend:
        """The KV's count of each quantity the budget limits (the others read as 0)."""
        tokens_key, micros_key, _ = self._counters(key_id, budget, now)
        tokens = await self.kv.get(tokens_key) if budget.max_tokens is not None else None
        micros = await self.kv.get(micros_key) if budget.max_spend is not None else None
        return Spend(int(tokens or 0), int(micros or 0))

    async def add(self, key_id: str, budget: Budget, tokens: int, micros: int) -> None:
        tokens_key, micros_key, ttl = self._counters(key_id, budget, self.clock.now())
        try:
            if tokens and budget.max_tokens is not None:
                await self.kv.incr(tokens_key, tokens, ttl)
            if micros and budget.max_spend is not None:
                await self.kv.incr(micros_key, micros, ttl)
        except Exception as exc:  # the next scan raises the counter to what the rows say
            log.warning("budget counter of %s not updated (%s)", key_id, type(exc).__name__)

    def refusal(self, budget: Budget, now: float) -> QuotaExceeded:
        limits = []
        if budget.max_tokens is not None:
            limits.append(f"{budget.max_tokens:,} tokens")
        if budget.max_spend is not None:
            limits.append(format_money(budget.max_spend, self.currency))
        _, end = period_bounds(budget.period, now)
        renews = "a total budget does not renew" if end is None else f"it renews at {iso(utc(end))}"
        return QuotaExceeded(
            f"This API key has spent its {PERIOD_WORDS[budget.period]} budget of {' or '.join(limits)}; "
            f"{renews}, or an administrator can raise it (PATCH /admin/api-keys/{{key_id}}).",
            code="budget_exceeded",
        )

    # -- reconciliation from the usage rows ------------------------------------------------------

    async def run(self, every: float) -> None:
        while True:
            try:
                await self.scan()
            except Exception:  # the next scan tries again; the counters keep working meanwhile
                log.exception("budget scan failed")
            await asyncio.sleep(every)

    async def scan(self) -> None:
        async with self._scanning:
            await self._scan()

    async def _scan(self) -> None:
        now = self.clock.now()
        keys = await budgeted_keys(self.db, utc(now))
        if not keys:
            self._totals, self.blocked = {}, {}
            return
        top = await top_usage_id(self.db)
        if now - self._synced >= RESYNC_SECONDS:
            self._totals, self._synced = {}, now
        totals: dict[tuple[str, float], Spend] = {}
        groups: dict[tuple[float, bool], list[BudgetedKey]] = {}
        for key in keys:
            start, _ = period_bounds(key.period, now)
            groups.setdefault((start, (key.key_id, start) in self._totals), []).append(key)
        for (start, known), group in groups.items():
            since = utc(start) if start else None
            sums = await spend_per_key(
                self.db,
                {k.tenant_id for k in group},
                [k.key_id for k in group],
                self.currency,
                since=since,
                after_id=self._watermark if known else 0,
                up_to_id=top,
            )
            for k in group:
                before = self._totals.get((k.key_id, start), Spend()) if known else Spend()
                totals[(k.key_id, start)] = before.plus(sums.get(k.key_id, Spend()))
        self._totals, self._watermark = totals, top
        await self._settle(keys, now)

    async def _settle(self, keys: list[BudgetedKey], now: float) -> None:
        """The per-process list of keys over budget, and counters raised to the rows' spend."""
        spent = []
        blocked: dict[str, tuple[float, Budget]] = {}
        for key in keys:
            budget = Budget(key.period, key.max_tokens, key.max_spend)
            start, end = period_bounds(key.period, now)
            rows = self._totals[(key.key_id, start)]
            spent.append((key.key_id, budget, rows))
            if budget.over(rows):
                blocked[key.key_id] = (math.inf if end is None else end, budget)
        self.blocked = blocked
        try:
            # One process at a time: two raising the same counter at once would count the gap twice.
            if not await self.kv.set_if_absent(SCAN_LOCK, b"1", ttl=LOCK_TTL):
                return
            try:
                for key_id, budget, rows in spent:
                    await self._raise_counter(key_id, budget, rows, now)
            finally:
                await self.kv.delete(SCAN_LOCK)
        except Exception as exc:
            log.warning("budget counters not reconciled (%s)", type(exc).__name__)

    async def _raise_counter(self, key_id: str, budget: Budget, rows: Spend, now: float) -> None:
        counted = await self.counted(key_id, budget, now)
        tokens_key, micros_key, ttl = self._counters(key_id, budget, now)
        if budget.max_tokens is not None and rows.tokens > counted.tokens:
            await self.kv.incr(tokens_key, rows.tokens - counted.tokens, ttl)
        if budget.max_spend is not None and rows.micros > counted.micros:
            await self.kv.incr(micros_key, rows.micros - counted.micros, ttl)
