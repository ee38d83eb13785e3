"""A tenant's standing: trials that end and renewals that fail turn live keys into 402s.

The rule (docs/billing.md, "Trial end and grace"): once ``tenants.trial_ends_at`` has passed without
an active (or trialing-at-the-provider) subscription, live keys get 402 ``trial_ended``; a failed
renewal keeps access until ``grace_until`` and then gives 402 ``payment_overdue``; a subscription
that ended gives 402 ``subscription_ended``. A plan without a list price (negotiated, billed by
contract) is paid by its contract until ``tenants.contract_ends_at`` and then gets 402
``contract_ended``; without a contract end it is an unpaid plan like any other (402 ``trial_ended``
after the trial). Sandbox keys (``sk_test_``) are never refused.

No query per request: like the token quota (agent_server/gateway/quota.py), a scan every few
seconds builds the tenants that are, or will be within a day, refused, each with the moment the
refusal starts; a request costs one dict lookup. A provider event that changes a tenant's standing
re-reads that tenant at once (``refresh``), so paying restores access in this process within the
event's own request; other processes follow at their next scan.

Transitions into a refusal happen by time passing, so the scan announces them: one audit entry per
transition across all processes, made once by a marker row in ``billing_events`` (its primary key
is the tenant, the code and the moment). Transitions out of a refusal, and the start of a grace
period, come from events and are audited by the event pipeline (events.py).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import or_, select
from sqlalchemy.exc import IntegrityError

from agent_server.billing.audit import audit_entry
from agent_server.billing.tables import BillingAccount, BillingEvent
from agent_server.foundation.clock import Clock
from agent_server.foundation.errors import PaymentRequired
from agent_server.foundation.timeutil import iso, utc
from agent_server.gateway.auth import KeyPrincipal
from agent_server.gateway.tables import Tenant
from agent_server.storage.db import Database

log = logging.getLogger("agentgate.billing")
PAID = frozenset({"active", "trialing"})  # the provider's statuses that keep live keys working
OVERDUE = frozenset({"past_due", "unpaid"})
HORIZON_SECONDS = 86_400.0  # the scan also keeps refusals starting within a day, to the second
ANNOUNCE_WITHIN = 30 * 86_400.0  # older refusals were announced when they began (or never will be)
FOREVER = float("inf")


# A subscription started in the trial is first charged at the trial's end, when at least this much of
# the trial is left: Stripe's Checkout takes a trial end at least 48 hours ahead. With less, it is
# charged at payment, on every provider alike.
TRIAL_CARRY_SECONDS = 48 * 3600.0


def first_charge_at(trial_ends_at: float, now: float) -> float | None:
    """When a subscription started ``now`` is first charged: the trial's end, or None (at payment)."""
    return trial_ends_at if trial_ends_at - now >= TRIAL_CARRY_SECONDS else None


def timestamp(value: datetime | None) -> float | None:
    """Seconds since the epoch; a naive value (SQLite) is UTC."""
    if value is None:
        return None
    return (value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp()


@dataclass(frozen=True)
class Standing:
    """Where a tenant stands now, and from when its live keys are refused if nothing changes."""

    # trial, active, grace, contract, trial_ended, payment_overdue, subscription_ended, contract_ended
    state: str
    refused_from: float  # FOREVER: not on the way to a refusal
    code: str | None  # the 402's code once refused
    trial_ends_at: float
    grace_until: float | None
    contract_ends_at: float | None = None

    def refused(self, now: float) -> bool:
        return now >= self.refused_from


def assess(
    now: float,
    *,
    trial_ends_at: float,
    status: str | None,
    grace_until: float | None,
    ended_at: float | None = None,
    negotiated: bool = False,
    contract_ends_at: float | None = None,
) -> Standing:
    """The standing from the tenant's trial and its billing account (``status`` None: no account)."""

    def standing(state: str, refused_from: float, code: str | None) -> Standing:
        return Standing(state, refused_from, code, trial_ends_at, grace_until, contract_ends_at)

    if negotiated:
        # Paid by its contract, not by a subscription (which pays for a self-serve plan). Refused from
        # the contract's end, or the trial's when that is later (or there is no contract).
        end = contract_ends_at
        in_contract = end is not None and now < end
        if end is not None and end > trial_ends_at:
            return standing("contract" if in_contract else "contract_ended", end, "contract_ended")
        state = "contract" if in_contract else "trial_ended" if now >= trial_ends_at else "trial"
        return standing(state, trial_ends_at, "trial_ended")
    if status in PAID:
        return standing("active", FOREVER, None)
    if status in OVERDUE:
        # The event pipeline sets grace_until with the status; the event's time is a stable fallback.
        until = grace_until if grace_until is not None else (ended_at or trial_ends_at)
        return standing("payment_overdue" if now >= until else "grace", until, "payment_overdue")
    if status == "canceled":
        # Refused from the end of the trial or of the subscription, whichever is later.
        start = max(trial_ends_at, ended_at or 0.0)
        return standing("subscription_ended" if now >= start else "trial", start, "subscription_ended")
    return standing("trial_ended" if now >= trial_ends_at else "trial", trial_ends_at, "trial_ended")


def moment(value: float) -> str:
    """A time for people: ``2026-06-01 14:00 UTC``."""
    return utc(value).strftime("%Y-%m-%d %H:%M UTC")


def refusal_message(code: str, moment: float, status_url: str) -> str:
    day = iso(utc(moment))[:10]
    first = {
        "trial_ended": f"The 14-day trial of this tenant ended on {day} without a subscription.",
        "payment_overdue": f"The last renewal payment failed and the grace period ended on {day}.",
        "subscription_ended": f"The tenant's subscription ended on {day}.",
        "contract_ended": f"The tenant's contract for its negotiated plan ended on {day}.",
    }[code]
    remedy = "the contract is renewed" if code == "contract_ended" else "the tenant subscribes or pays"
    return (
        f"{first} Live keys are paused until {remedy}; sandbox (sk_test_) keys keep working. "
        f"Billing status: {status_url}"
    )


def standing_view(standing: Standing, now: float, status_url: str) -> dict[str, Any]:
    """What ``status`` shows as ``standing``: {state, trial_ends_at, grace_until, contract_ends_at,
    reason, code}."""
    refused = standing.refused(now)
    reason = None
    if refused and standing.code:
        reason = refusal_message(standing.code, standing.refused_from, status_url)
    elif standing.state == "grace" and standing.grace_until is not None:
        reason = (
            f"The last renewal payment failed; live keys keep working until {moment(standing.grace_until)} "
            "unless it is paid by then."
        )
    elif standing.state == "trial":
        reason = (
            f"In the free trial until {moment(standing.trial_ends_at)}; subscribe before then to keep "
            "live keys working."
        )
    elif standing.state == "contract" and standing.contract_ends_at is not None:
        reason = f"Billed by contract until {moment(standing.contract_ends_at)}; live keys work until then."
    return {
        "state": standing.state,
        "trial_ends_at": iso(utc(standing.trial_ends_at)),
        "grace_until": iso(utc(standing.grace_until)) if standing.grace_until is not None else None,
        "contract_ends_at": iso(utc(contract))
        if (contract := standing.contract_ends_at) is not None
        else None,
        "reason": reason,
        "code": standing.code if refused else None,
    }


_COLUMNS = (
    Tenant.id,
    Tenant.plan_id,
    Tenant.trial_ends_at,
    BillingAccount.subscription_status,
    BillingAccount.grace_until,
    BillingAccount.subscription_event_at,
    Tenant.contract_ends_at,
)


class StandingGate:
    """The hot-path check and the scan behind it; one per app (``billing_engine``)."""

    def __init__(self, db: Database, clock: Clock, status_url: str, negotiated_plans: frozenset[str]) -> None:
        self.db, self.clock, self.status_url = db, clock, status_url
        self.negotiated_plans = negotiated_plans
        # tenant -> (refused from, code, message): refused and soon-refused tenants only.
        self.refused: dict[str, tuple[float, str, str]] = {}
        self._announced: set[str] = set()
        # Tenants re-read while a scan runs: the scan's older reading must not undo them.
        self._refreshed: dict[str, tuple[float, str, str] | None] | None = None

    def check(self, principal: KeyPrincipal) -> None:
        """The hot path: a live key of a tenant not in good standing gets 402."""
        entry = self.refused.get(principal.tenant_id)
        if entry is None or principal.environment != "live" or self.clock.now() < entry[0]:
            return
        raise PaymentRequired(entry[2], code=entry[1])

    def _assess_row(self, row: Any, now: float) -> Standing:
        _, plan_id, trial_ends_at, status, grace_until, event_at, contract_ends_at = row
        return assess(
            now,
            trial_ends_at=timestamp(trial_ends_at) or 0.0,
            status=status,
            grace_until=timestamp(grace_until),
            ended_at=float(event_at) if event_at is not None else None,
            negotiated=plan_id in self.negotiated_plans,
            contract_ends_at=timestamp(contract_ends_at),
        )

    def _entry(self, standing: Standing) -> tuple[float, str, str] | None:
        if standing.code is None or standing.refused_from == FOREVER:
            return None
        message = refusal_message(standing.code, standing.refused_from, self.status_url)
        return standing.refused_from, standing.code, message

    async def scan(self) -> None:
        now = self.clock.now()
        horizon = utc(now + HORIZON_SECONDS)
        query = (
            select(*_COLUMNS)
            .outerjoin(BillingAccount, BillingAccount.tenant_id == Tenant.id)  # type: ignore[arg-type]
            .where(
                or_(
                    BillingAccount.subscription_status.is_(None),  # type: ignore[union-attr]
                    BillingAccount.subscription_status.not_in(PAID),  # type: ignore[union-attr]
                    Tenant.plan_id.in_(self.negotiated_plans),  # type: ignore[attr-defined]
                ),
                or_(
                    Tenant.trial_ends_at <= horizon,  # type: ignore[operator]
                    BillingAccount.grace_until <= horizon,  # type: ignore[operator]
                    Tenant.contract_ends_at <= horizon,  # type: ignore[operator]
                ),
            )
        )
        self._refreshed = {}
        try:
            async with self.db.session() as session:
                rows = (await session.execute(query)).all()
            refused = await self._refusals(rows, now)
            for tenant_id, entry in self._refreshed.items():
                if entry is None:
                    refused.pop(tenant_id, None)
                else:
                    refused[tenant_id] = entry
            self.refused = refused
        finally:
            self._refreshed = None

    async def _refusals(self, rows: Any, now: float) -> dict[str, tuple[float, str, str]]:
        refused: dict[str, tuple[float, str, str]] = {}
        for row in rows:
            standing = self._assess_row(row, now)
            entry = self._entry(standing)
            if entry is not None and entry[0] <= now + HORIZON_SECONDS:
                refused[row[0]] = entry
                if standing.refused(now) and now - standing.refused_from < ANNOUNCE_WITHIN:
                    await self._announce(row[0], standing)
        return refused

    async def refresh(self, tenant_id: str) -> None:
        """Re-read one tenant now (after an event or a subscription change)."""
        standing = await self.standing_of(tenant_id)
        entry = self._entry(standing) if standing is not None else None
        if entry is None:
            self.refused.pop(tenant_id, None)
        else:
            self.refused[tenant_id] = entry
        if self._refreshed is not None:
            self._refreshed[tenant_id] = entry

    async def standing_of(self, tenant_id: str) -> Standing | None:
        query = (
            select(*_COLUMNS)
            .outerjoin(BillingAccount, BillingAccount.tenant_id == Tenant.id)  # type: ignore[arg-type]
            .where(Tenant.id == tenant_id)
        )
        async with self.db.session() as session:
            row = (await session.execute(query)).first()
        return self._assess_row(row, self.clock.now()) if row is not None else None

    async def standings(self, tenant_ids: list[str]) -> dict[str, Standing]:
        """The standing of each of ``tenant_ids`` now (the platform's tenant list)."""
        if not tenant_ids:
            return {}
        query = (
            select(*_COLUMNS)
            .outerjoin(BillingAccount, BillingAccount.tenant_id == Tenant.id)  # type: ignore[arg-type]
            .where(Tenant.id.in_(tenant_ids))  # type: ignore[attr-defined]
        )
        async with self.db.session() as session:
            rows = (await session.execute(query)).all()
        now = self.clock.now()
        return {row[0]: self._assess_row(row, now) for row in rows}

    async def _announce(self, tenant_id: str, standing: Standing) -> None:
        """One audit entry per refusal across processes: the marker row's key makes it once."""
        assert standing.code is not None
        marker = f"standing:{tenant_id}:{standing.code}:{int(standing.refused_from)}"
        if marker in self._announced:
            return
        now = utc(self.clock.now())
        try:
            async with self.db.session() as session:
                if await session.get(BillingEvent, marker) is None:
                    session.add(
                        BillingEvent(
                            id=marker,
                            type=f"standing.{standing.code}",
                            provider_created=int(standing.refused_from),
                            tenant_id=tenant_id,
                            received_at=now,
                            outcome="applied",
                        )
                    )
                    await session.flush()
                    session.add(
                        audit_entry(
                            tenant_id,
                            f"billing.{standing.code}",
                            now,
                            details={"since": iso(utc(standing.refused_from)), "state": standing.state},
                        )
                    )
        except IntegrityError:
            pass  # another process announced it first
        self._announced.add(marker)

    async def run(self, every: float) -> None:
        while True:
            try:
                await self.scan()
            except Exception:  # the next scan tries again; the gate keeps its last answer meanwhile
                log.exception("billing standing scan failed")
            await asyncio.sleep(every)
