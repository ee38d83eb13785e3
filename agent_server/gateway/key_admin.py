"""API key administration: issue, change, revoke and rotate keys, and the spend a key shows.

Routes, the CLI and tests reach it through ``Gateway`` (``issue_key``, ``revoke_key``,
``rotate_key``, ``key_admin.update``, ``key_admin.spend``). A change takes effect on this process's
next request (its cached key is dropped) and on other processes within the key cache TTL.

A plan may limit the live keys of a tenant (``max_keys``): issuing one more, or rotating with an
overlap (both keys live for a while), is then 403 ``plan_limit_exceeded``. A rotation without
overlap replaces one live key by another, so it is never refused for the limit.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from agent_server.foundation.errors import PlanLimitExceeded, ValidationFailed
from agent_server.foundation.events import KeyRotated
from agent_server.foundation.timeutil import iso, utc
from agent_server.gateway import repository as repo
from agent_server.gateway.budgets import budget_of, period_bounds
from agent_server.gateway.key_settings import DEFAULT_SCOPES, KeyOptions, key_name
from agent_server.gateway.plans import PlanInfo, check_scopes
from agent_server.gateway.spend import Spend, minor, spend_per_key
from agent_server.gateway.tables import ApiKey, unix

if TYPE_CHECKING:
    from agent_server.gateway.service import Gateway

log = logging.getLogger("agentgate.gateway")


MAX_OVERLAP = 7 * 86_400  # a rotation's old key works at most a week beside the new one


def is_live(record: ApiKey, now: float) -> bool:
    """The key works at ``now``: not revoked yet (a rotation's overlap counts), not expired."""
    return (record.revoked_at is None or unix(record.revoked_at) > now) and (
        record.expires_at is None or unix(record.expires_at) > now
    )


def key_limit_refusal(plan: PlanInfo, plans: Sequence[PlanInfo], live: int) -> PlanLimitExceeded:
    """The 403 of a tenant at its plan's key limit, naming the plan that allows more."""
    limit = plan.max_keys
    larger = [p for p in plans if p.id != plan.id and (p.max_keys is None or p.max_keys > (limit or 0))]
    # The next step up: the smallest larger limit, then no limit at all.
    larger.sort(key=lambda p: (p.max_keys is None, p.max_keys or 0, p.name))
    hint = "revoke a key you no longer use"
    if larger:
        more = "any number of" if larger[0].max_keys is None else f"{larger[0].max_keys}"
        hint += f", or move to the {larger[0].name} plan ({more} keys)"
    return PlanLimitExceeded(
        f"The {plan.name} plan allows {limit} active API keys and this organisation has {live}; {hint}."
    )


class KeyAdmin:
    def __init__(self, gateway: Gateway) -> None:
        self._gateway = gateway

    async def _tenant_plan(self, tenant_id: str) -> tuple[str, PlanInfo]:
        """The tenant's id (``tenant_id`` may be its name) and its plan."""
        gateway = self._gateway
        tenant = await repo.find_tenant(gateway.db, tenant_id)
        if tenant is None:
            raise ValidationFailed(f"Unknown tenant '{tenant_id}'.", param="tenant")
        return tenant.id, gateway.catalog.get(tenant.plan_id)

    async def _tenant_scopes(self, tenant_id: str, scopes: list[str]) -> tuple[str, list[str]]:
        """The tenant's id and the scopes, checked against its plan."""
        owner, plan = await self._tenant_plan(tenant_id)
        return owner, check_scopes(plan, scopes)

    def _cap(self, plan: PlanInfo) -> repo.KeyCap | None:
        """The plan's key limit as the repository applies it: room for one more live key, or 403."""
        limit = plan.max_keys
        if limit is None:
            return None
        plans = list(self._gateway.catalog.plans.values())

        def cap(live: int) -> None:
            if live >= limit:
                raise key_limit_refusal(plan, plans, live)

        return cap

    def _columns(self, options: KeyOptions, fields: set[str] | None) -> dict[str, Any]:
        expires = options.expires_at
        if expires is not None and expires.timestamp() <= self._gateway.clock.now():
            raise ValidationFailed("expires_at must be in the future.", param="expires_at")
        return options.columns(fields)

    async def issue(
        self,
        tenant_id: str,
        name: str,
        scopes: list[str] | None = None,
        options: KeyOptions | None = None,
    ) -> tuple[ApiKey, str]:
        """A new key; without ``scopes``, ``DEFAULT_SCOPES`` (those of them the plan allows)."""
        gateway = self._gateway
        owner, plan = await self._tenant_plan(tenant_id)
        if scopes is None:
            scopes = [scope for scope in DEFAULT_SCOPES if scope in plan.scopes]
        wanted = check_scopes(plan, scopes)
        columns = self._columns(options, None) if options is not None else None
        record, full = repo.new_key(
            gateway.clock.now(), owner, key_name(name), wanted, gateway.environment, columns
        )
        await repo.add_key(gateway.db, record, self._cap(plan))
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
            values["name"] = key_name(name)
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

    async def rotate(self, tenant_id: str, key_id: str, overlap: int = 0) -> tuple[ApiKey, ApiKey, str]:
        """A new key for the old one, which stops ``overlap`` seconds from now (at once: 0)."""
        if not 0 <= overlap <= MAX_OVERLAP:
            raise ValidationFailed(
                f"overlap_seconds is 0 to {MAX_OVERLAP} (7 days).", param="overlap_seconds"
            )
        gateway = self._gateway
        now = gateway.clock.now()
        cap = self._cap((await self._tenant_plan(tenant_id))[1]) if overlap else None
        old, new, full = await repo.rotate_key(gateway.db, now, tenant_id, key_id, overlap=overlap, cap=cap)
        gateway.keys.invalidate(old.digest)  # its cached entry lacks the overlap's end
        stops = iso(utc(now + overlap)) if overlap else None
        await gateway.services.events.publish(
            KeyRotated(
                tenant_id=tenant_id,
                occurred_at=now,
                old_key_id=old.id,
                new_key_id=new.id,
                name=new.name,
                old_key_revoked_at=stops,
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
                if budget is not None and is_live(record, now):
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
