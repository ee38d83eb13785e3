"""Multi-year schedules kept by us: yearly phases, each applied to the subscription at its boundary.

The provider's own subscription schedules are not used (the local test provider has none, and one
way of doing it is simpler to reason about): a schedule is a row of phases ``{plan_id, years,
starts_at, ends_at, applied_at}``. At creation a first phase that starts now is applied at once;
the periodic pass (jobs.py) applies each later phase when its ``starts_at`` has passed, as a plan
change without proration. A tenant has at most one active schedule: a new one replaces it.

Once across processes: a phase is claimed by a compare-and-set on the row's ``updated_at`` (its
``applied_at`` written) before the provider is called; if the call fails the claim is undone and
the next pass tries again. When the last phase has started the schedule is ``completed`` and the
subscription stays on its plan.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable
from datetime import datetime
from typing import Any

from sqlalchemy import select, update

from agent_server.billing.audit import audit_entry
from agent_server.billing.plan_changes import PlanChanges
from agent_server.billing.pricebook import PriceBook
from agent_server.billing.tables import SubscriptionSchedule
from agent_server.billing.trial import timestamp
from agent_server.foundation.clock import Clock
from agent_server.foundation.errors import NotFound, ValidationFailed
from agent_server.foundation.timeutil import iso, utc
from agent_server.storage.db import Database

log = logging.getLogger("agentgate.billing")
ACTOR = "billing:schedule"


def add_years(moment: datetime, years: int) -> datetime:
    """The same day and time ``years`` later (29 February becomes 28 February)."""
    try:
        return moment.replace(year=moment.year + years)
    except ValueError:
        return moment.replace(year=moment.year + years, day=28)


def build_phases(phases: list[tuple[str, int]], start: datetime) -> list[dict[str, Any]]:
    built, at = [], start
    for plan_id, years in phases:
        end = add_years(at, years)
        built.append(
            {
                "plan_id": plan_id,
                "years": years,
                "starts_at": iso(at),
                "ends_at": iso(end),
                "applied_at": None,
            }
        )
        at = end
    return built


def _moment(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def current_phase(phases: list[dict[str, Any]], now: float) -> int | None:
    for number, phase in enumerate(phases):
        if _moment(phase["starts_at"]) <= now < _moment(phase["ends_at"]):
            return number
    return None


def schedule_view(schedule: SubscriptionSchedule, now: float) -> dict[str, Any]:
    current = current_phase(schedule.phases, now)
    upcoming = [p["starts_at"] for p in schedule.phases if _moment(p["starts_at"]) > now]
    return {
        "object": "subscription_schedule",
        "id": schedule.id,
        "status": schedule.status,
        "phases": schedule.phases,
        "current_phase": current,
        "current_plan_id": schedule.phases[current]["plan_id"] if current is not None else None,
        "next_change_at": upcoming[0] if upcoming else None,
        "created_at": iso(schedule.created_at),
    }


class Schedules:
    def __init__(
        self, db: Database, clock: Clock, changes: PlanChanges, prices: Callable[[], PriceBook]
    ) -> None:
        self.db, self.clock, self.changes, self.prices = db, clock, changes, prices

    async def create(
        self, tenant_id: str, phases: list[tuple[str, int]], start: datetime | None, actor: str
    ) -> dict[str, Any]:
        book = self.prices()
        for number, (plan_id, _) in enumerate(phases):
            try:
                book.plan_price(plan_id)
            except ValidationFailed as refused:
                raise ValidationFailed(
                    refused.message, code=refused.code, param=f"phases[{number}].plan_id"
                ) from None
        now = self.clock.now()
        begin = utc(now) if start is None else start
        if begin.timestamp() < now - 86_400:
            raise ValidationFailed("start may not lie more than a day in the past.", param="start")
        await self.changes.subscribed(tenant_id)  # 409 without a live subscription
        schedule = SubscriptionSchedule(
            id="sch_" + secrets.token_hex(12),
            tenant_id=tenant_id,
            phases=build_phases(phases, begin),
            status="active",
            created_at=utc(now),
            updated_at=utc(now),
        )
        async with self.db.session() as session:
            replaced = (
                await session.execute(
                    select(SubscriptionSchedule).where(
                        SubscriptionSchedule.tenant_id == tenant_id, SubscriptionSchedule.status == "active"
                    )
                )
            ).scalars()
            replaced_ids = []
            for old in replaced:
                old.status, old.updated_at = "canceled", utc(now)
                replaced_ids.append(old.id)
            session.add(schedule)
            details = {"phases": [[p, y] for p, y in phases], "replaced": replaced_ids}
            session.add(
                audit_entry(
                    tenant_id,
                    "billing.schedule.create",
                    utc(now),
                    actor=actor,
                    target=schedule.id,
                    details=details,
                )
            )
        await self.apply_due(schedule)
        return await self.get(tenant_id)

    async def get(self, tenant_id: str) -> dict[str, Any]:
        """The tenant's newest schedule (active, else the last completed or replaced one)."""
        async with self.db.session() as session:
            schedule = (
                await session.execute(
                    select(SubscriptionSchedule)
                    .where(SubscriptionSchedule.tenant_id == tenant_id)
                    .order_by(
                        SubscriptionSchedule.created_at.desc(),
                        (SubscriptionSchedule.status == "active").desc(),
                    )  # type: ignore[attr-defined]
                    .limit(1)
                )
            ).scalar_one_or_none()
        if schedule is None:
            raise NotFound("This tenant has no multi-year schedule.", code="no_schedule")
        return schedule_view(schedule, self.clock.now())

    async def run_once(self) -> int:
        """Apply every phase whose start has passed; returns how many were applied."""
        async with self.db.session() as session:
            active = list(
                (
                    await session.execute(
                        select(SubscriptionSchedule).where(SubscriptionSchedule.status == "active")
                    )
                ).scalars()
            )
        applied = 0
        for schedule in active:
            applied += await self.apply_due(schedule)
        return applied

    async def apply_due(self, schedule: SubscriptionSchedule) -> int:
        now = self.clock.now()
        due = [
            n
            for n, p in enumerate(schedule.phases)
            if p["applied_at"] is None and _moment(p["starts_at"]) <= now
        ]
        if not due:
            return 0
        phases = [dict(p) for p in schedule.phases]
        for number in due:  # phases passed while nothing ran are skipped: only the newest one applies
            phases[number]["applied_at"] = iso(utc(now))
        done = all(p["applied_at"] is not None for p in phases)
        claimed = await self._swap(schedule, phases, "completed" if done else "active")
        if claimed is None:
            return 0  # another process took it
        plan_id = phases[due[-1]]["plan_id"]
        try:
            await self.changes.apply_plan(schedule.tenant_id, plan_id, ACTOR, "billing.schedule.phase")
        except Exception:
            log.exception("schedule %s: phase %d not applied; retried at the next pass", schedule.id, due[-1])
            await self._swap(claimed, schedule.phases, "active")
            return 0
        return 1

    async def _swap(
        self, schedule: SubscriptionSchedule, phases: list[dict[str, Any]], status: str
    ) -> SubscriptionSchedule | None:
        """Compare-and-set on ``updated_at``: the new state if this process won, None otherwise."""
        stamp = utc(max(self.clock.now(), (timestamp(schedule.updated_at) or 0) + 0.001))
        async with self.db.session() as session:
            result = await session.execute(
                update(SubscriptionSchedule)
                .where(
                    SubscriptionSchedule.id == schedule.id,
                    SubscriptionSchedule.updated_at == schedule.updated_at,
                )  # type: ignore[arg-type]
                .values(phases=phases, status=status, updated_at=stamp)
            )
        if result.rowcount != 1:  # type: ignore[attr-defined]
            return None
        return SubscriptionSchedule(
            id=schedule.id,
            tenant_id=schedule.tenant_id,
            phases=phases,
            status=status,
            created_at=schedule.created_at,
            updated_at=stamp,
        )
