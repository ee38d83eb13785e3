"""Usage billed at each period close: tokens per model times the model's price, once per period.

Which period (docs/billing.md, "Usage billing"): a tenant with a subscription is billed per the
provider's period (``current_period_start`` .. ``current_period_end``) once its end has passed; a
tenant with a customer at the provider but no subscription period is billed per calendar month
(UTC). Tenants without a customer (trials) are not billed. Only live keys count; sandbox keys are
free. Money is integer minor units: a line is tokens x price per million tokens, rounded half up
to a whole minor unit once per model (never floats).

Once, even with several processes: a period is claimed by inserting its ``billing_usage_reports``
row (unique per tenant and period start) before anything is sent, then each line is sent to the
provider as an invoice item with an idempotency key derived from the tenant, the period and the
model, then the row is marked ``reported``. A process that dies between claim and report leaves
the row ``claimed``; a later pass takes over a claim older than ``STALE_CLAIM`` and sends the same
lines with the same keys, so the provider does not charge twice. A period whose end the provider
announced (a renewal event moved the subscription on) before a pass saw it is written as ``due``
by the event handler and claimed by the next pass.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from agent_server.billing.port import BillingProvider
from agent_server.billing.tables import BillingAccount, UsageReport
from agent_server.billing.trial import timestamp
from agent_server.foundation.clock import Clock
from agent_server.foundation.timeutil import month_bounds, utc
from agent_server.gateway.tables import ApiKey, UsageRecord
from agent_server.storage.db import Database

log = logging.getLogger("agentgate.billing")
STALE_CLAIM = timedelta(minutes=10)
SETTLE = timedelta(minutes=1)  # usage rows of a period's last moments reach the table in batches
Prices = Mapping[str, tuple[int, int]]  # model -> minor units per 1M prompt, completion tokens


def new_report_id() -> str:
    return "ubr_" + secrets.token_hex(12)


async def note_closed_period(
    session: AsyncSession, tenant_id: str, start: datetime, end: datetime, now: datetime
) -> None:
    """A period the provider closed (in an event's transaction): due for the next pass, once."""
    found = await session.execute(
        select(UsageReport.id).where(UsageReport.tenant_id == tenant_id, UsageReport.period_start == start)
    )
    if found.first() is None:
        session.add(
            UsageReport(
                id=new_report_id(),
                tenant_id=tenant_id,
                period_start=start,
                period_end=end,
                amount_minor=0,
                currency="",
                lines=[],
                provider_refs=[],
                status="due",
                created_at=now,
            )
        )


def price_lines(usage: list[tuple[str, int, int]], prices: Prices) -> list[dict[str, Any]]:
    """One line per model with its tokens, prices and amount (half up to a whole minor unit)."""
    lines = []
    for model, prompt, completion in sorted(usage):
        price_in, price_out = prices.get(model, (0, 0))
        micros = prompt * price_in + completion * price_out  # millionths of a minor unit, exact
        lines.append(
            {
                "model": model,
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "input_price_per_mtok": price_in,
                "output_price_per_mtok": price_out,
                "amount_minor": (micros + 500_000) // 1_000_000,
            }
        )
    return lines


@dataclass(frozen=True)
class Period:
    tenant_id: str
    customer_id: str
    start: datetime
    end: datetime


class UsageBilling:
    def __init__(
        self, db: Database, clock: Clock, provider: BillingProvider, prices: Prices, currency: str
    ) -> None:
        self.db, self.clock, self.provider = db, clock, provider
        self.prices, self.currency = prices, currency

    async def run_once(self) -> list[str]:
        """Close every period that ended; returns the ids of the reports this process sent."""
        now = utc(self.clock.now())
        sent = []
        for period in await self._closed_periods(now):
            report = await self._claim_new(period, now)
            if report is not None and await self._report(report, period.customer_id):
                sent.append(report.id)
        for report, customer in await self._retakes(now):
            if await self._report(report, customer):
                sent.append(report.id)
        return sent

    async def _closed_periods(self, now: datetime) -> list[Period]:
        """Periods that ended (settled) and have no report row yet."""
        cutoff = now - SETTLE
        month_start, _ = month_bounds((now - SETTLE).timestamp())
        previous_month, _ = month_bounds(month_start.timestamp() - 1)
        async with self.db.session() as session:
            accounts = (
                await session.execute(
                    select(BillingAccount).where(BillingAccount.customer_id.is_not(None))  # type: ignore[union-attr]
                )
            ).scalars()
            candidates = []
            for account in accounts:
                start, end = account.current_period_start, account.current_period_end
                if account.subscription_id is None:
                    start, end = previous_month, month_start  # no provider period: calendar months
                elif start is None or end is None:
                    continue  # subscribed, the period not known yet: the subscription's event brings it
                if (timestamp(end) or 0) <= cutoff.timestamp():
                    candidates.append(Period(account.tenant_id, account.customer_id or "", start, end))
            if not candidates:
                return []
            known = {
                (tenant, timestamp(start))
                for tenant, start in await session.execute(
                    select(UsageReport.tenant_id, UsageReport.period_start).where(
                        UsageReport.tenant_id.in_([c.tenant_id for c in candidates])  # type: ignore[attr-defined]
                    )
                )
            }
        return [c for c in candidates if (c.tenant_id, timestamp(c.start)) not in known]

    async def _usage(self, tenant_id: str, start: datetime, end: datetime) -> list[tuple[str, int, int]]:
        """Live usage per model from ``start`` (or the end of an overlapping earlier report, so that a
        calendar month and a first subscription period never bill the same tokens) to ``end``."""
        reports = UsageReport.__table__.c  # type: ignore[attr-defined]
        table = UsageRecord.__table__.c  # type: ignore[attr-defined]
        async with self.db.session() as session:
            floor = await session.scalar(
                select(func.max(reports.period_end)).where(
                    reports.tenant_id == tenant_id, reports.period_start < start, reports.period_end > start
                )
            )
        start = floor if floor is not None and (timestamp(floor) or 0) > (timestamp(start) or 0) else start
        query = (
            select(table.model, func.sum(table.prompt_tokens), func.sum(table.completion_tokens))
            .join(ApiKey, ApiKey.id == table.key_id)  # type: ignore[arg-type]
            .where(
                table.tenant_id == tenant_id,
                table.created_at >= start,
                table.created_at < end,
                ApiKey.environment == "live",
            )
            .group_by(table.model)
        )
        async with self.db.session() as session:
            rows = (await session.execute(query)).all()
        return [(model, int(p or 0), int(c or 0)) for model, p, c in rows if model]

    async def _claim_new(self, period: Period, now: datetime) -> UsageReport | None:
        """Insert the period's row as ``claimed``; None when another process inserted it first."""
        lines = price_lines(await self._usage(period.tenant_id, period.start, period.end), self.prices)
        report = UsageReport(
            id=new_report_id(),
            tenant_id=period.tenant_id,
            period_start=period.start,
            period_end=period.end,
            amount_minor=sum(line["amount_minor"] for line in lines),
            currency=self.currency,
            lines=lines,
            provider_refs=[],
            status="claimed",
            created_at=now,
            claimed_at=now,
        )
        try:
            async with self.db.session() as session:
                session.add(report)
        except IntegrityError:
            return None
        return report

    async def _retakes(self, now: datetime) -> list[tuple[UsageReport, str]]:
        """Rows written ``due`` by an event, and claims a dead process left behind, taken over by CAS."""
        stale = now - STALE_CLAIM
        async with self.db.session() as session:
            rows = (
                await session.execute(
                    select(UsageReport, BillingAccount.customer_id)
                    .join(BillingAccount, BillingAccount.tenant_id == UsageReport.tenant_id)  # type: ignore[arg-type]
                    .where(
                        (UsageReport.status == "due")
                        | ((UsageReport.status == "claimed") & (UsageReport.claimed_at < stale))  # type: ignore[operator]
                    )
                )
            ).all()
        taken = []
        for report, customer in rows:
            if customer and await self._take(report, now):
                taken.append((report, customer))
        return taken

    async def _take(self, report: UsageReport, now: datetime) -> bool:
        table = UsageReport.__table__.c  # type: ignore[attr-defined]
        change = update(UsageReport).where(table.id == report.id, table.status == report.status)
        if report.status == "due":
            lines = price_lines(
                await self._usage(report.tenant_id, report.period_start, report.period_end), self.prices
            )
            report.lines, report.currency = lines, self.currency
            report.amount_minor = sum(line["amount_minor"] for line in lines)
            values: dict[str, Any] = {
                "lines": lines,
                "amount_minor": report.amount_minor,
                "currency": self.currency,
            }
        else:
            change = change.where(table.claimed_at == report.claimed_at)
            values = {}
        async with self.db.session() as session:
            result = await session.execute(change.values(status="claimed", claimed_at=now, **values))
        report.status, report.claimed_at = "claimed", now
        return result.rowcount == 1  # type: ignore[attr-defined]

    async def _report(self, report: UsageReport, customer_id: str) -> bool:
        """Send the report's lines as invoice items (same keys on a retry), then mark it reported."""
        start, end = report.period_start, report.period_end
        refs = []
        try:
            for line in report.lines:
                if line["amount_minor"] <= 0:
                    continue
                refs.append(
                    await self.provider.add_invoice_item(
                        customer_id,
                        line["amount_minor"],
                        report.currency,
                        f"{line['model']}: {line['prompt_tokens']:,} input and {line['completion_tokens']:,} "
                        f"output tokens, {start:%Y-%m-%d} to {end:%Y-%m-%d}",
                        f"usage:{report.tenant_id}:{int(timestamp(start) or 0)}:{line['model']}",
                    )
                )
        except Exception:  # the claim stays; a later pass retakes it with the same idempotency keys
            log.exception("usage report %s not sent; retried after the claim goes stale", report.id)
            return False
        table = UsageReport.__table__.c  # type: ignore[attr-defined]
        async with self.db.session() as session:
            await session.execute(
                update(UsageReport)
                .where(table.id == report.id, table.status == "claimed")
                .values(status="reported", provider_refs=refs, reported_at=utc(self.clock.now()))
            )
        return True
