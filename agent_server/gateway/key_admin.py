"""API key administration: issue, change, revoke and rotate keys, and the spend a key shows.

Routes, the CLI and tests reach it through ``Gateway`` (``issue_key``, ``revoke_key``,
``rotate_key``, ``key_admin.update``, ``key_admin.spend``). A change takes effect on this process's
next request (its cached key is dropped) and on other processes within the key cache TTL.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from agent_server.errors import ValidationFailed
from agent_server.events import KeyRotated
from agent_server.gateway import repository as repo
from agent_server.gateway.budgets import budget_of, period_bounds
from agent_server.gateway.key_settings import KeyOptions
from agent_server.gateway.plans import check_scopes
from agent_server.gateway.spend import Spend, minor, spend_per_key
from agent_server.gateway.tables import ApiKey
from agent_server.timeutil import utc

if TYPE_CHECKING:
    from agent_server.gateway.service import Gateway

log = logging.getLogger("agentgate.gateway")


class KeyAdmin:
    def __init__(self, gateway: Gateway) -> None:
        self._gateway = gateway

    async def _tenant_scopes(self, tenant_id: str, scopes: list[str]) -> tuple[str, list[str]]:
        """The tenant's id (``tenant_id`` may be its name) and the scopes, checked against its plan."""
        gateway = self._gateway
        tenant = await repo.find_tenant(gateway.db, tenant_id)
        if tenant is None:
            raise ValidationFailed(f"Unknown tenant '{tenant_id}'.", param="tenant")
        return tenant.id, check_scopes(gateway.catalog.get(tenant.plan_id), scopes)

    def _columns(self, options: KeyOptions, fields: set[str] | None) -> dict[str, Any]:
        expires = options.expires_at
        if expires is not None and expires.timestamp() <= self._gateway.clock.now():
            raise ValidationFailed("expires_at must be in the future.", param="expires_at")
        return options.columns(fields)

    async def issue(
        self, tenant_id: str, name: str, scopes: list[str], options: KeyOptions | None = None
    ) -> tuple[ApiKey, str]:
        gateway = self._gateway
        owner, wanted = await self._tenant_scopes(tenant_id, scopes)
        columns = self._columns(options, None) if options is not None else None
        record, full = repo.new_key(gateway.clock.now(), owner, name, wanted, gateway.environment, columns)
        await repo.add_key(gateway.db, record)
        return record, full

    async def update(
        self,
        tenant_id: str,
        key_id: str,
        *,
        name: str | None = None,
        scopes: list[str] | None = None,
        options: KeyOptions | None = None,
    ) -> ApiKey:
        """Change what is given; of ``options`` only the fields that were set (null clears one)."""
        values: dict[str, Any] = {}
        if name is not None:
            values["name"] = name
        if scopes is not None:
            values["scopes"] = (await self._tenant_scopes(tenant_id, scopes))[1]
        if options is not None:
            values.update(self._columns(options, set(options.model_fields_set)))
        gateway = self._gateway
        record = await repo.update_key(gateway.db, tenant_id, key_id, values)
        gateway.keys.invalidate(record.digest)
        if "budget_period" in values and record.budget_period is not None:
            await self._count_past_spend()
        return record

    async def _count_past_spend(self) -> None:
        """A new budget counts what the key already spent this period now, not at the next scan."""
        gateway = self._gateway
        try:
            await gateway.usage.flush()
            await gateway.budgets.scan()
        except Exception as exc:  # the periodic scan does it soon
            log.warning("budget scan after a key change failed (%s)", type(exc).__name__)

    async def revoke(self, tenant_id: str, key_id: str) -> ApiKey:
        gateway = self._gateway
        record = await repo.revoke_key(gateway.db, gateway.clock.now(), tenant_id, key_id)
        gateway.keys.invalidate(record.digest)
        return record

    async def rotate(self, tenant_id: str, key_id: str) -> tuple[ApiKey, ApiKey, str]:
        gateway = self._gateway
        now = gateway.clock.now()
        old, new, full = await repo.rotate_key(gateway.db, now, tenant_id, key_id)
        gateway.keys.invalidate(old.digest)
        await gateway.services.events.publish(
            KeyRotated(
                tenant_id=tenant_id, occurred_at=now, old_key_id=old.id, new_key_id=new.id, name=new.name
            )
        )
        return old, new, full

    async def spend(self, tenant_id: str, records: list[ApiKey]) -> dict[str, dict[str, Any]]:
        """Per key: tokens and cost in its budget's current period (in total for a key without a
        budget), from the usage rows and, for a key with a budget, its live counter if ahead."""
        gateway = self._gateway
        now, currency = gateway.clock.now(), gateway.models.currency
        by_period: dict[str, list[ApiKey]] = {}
        for record in records:
            by_period.setdefault(record.budget_period or "total", []).append(record)
        views: dict[str, dict[str, Any]] = {}
        for period, group in by_period.items():
            start, end = period_bounds(period, now)
            since = utc(start) if start else None
            sums = await spend_per_key(gateway.db, {tenant_id}, [r.id for r in group], currency, since=since)
            for record in group:
                spent = sums.get(record.id, Spend())
                budget = budget_of(record.budget_period, record.budget_tokens, record.budget_spend)
                if budget is not None and record.revoked_at is None:
                    try:
                        spent = spent.merged(await gateway.budgets.counted(record.id, budget, now))
                    except Exception as exc:  # the KV is away: the rows alone
                        log.warning("budget counter of %s unreadable (%s)", record.id, type(exc).__name__)
                views[record.id] = {
                    "period": period,
                    "period_start": int(start) if start else None,
                    "period_end": int(end) if end is not None else None,
                    "tokens": spent.tokens,
                    "cost": minor(spent.micros),
                    "cost_micros": spent.micros,
                    "currency": currency,
                }
        return views
