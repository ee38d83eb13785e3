"""Usage billed at each period close: live tokens per model times the model's price (integer minor
units), sent once to the provider as invoice items, with each provider."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select

from agent_server.billing.tables import UsageReport
from agent_server.billing.usage_billing import SETTLE, STALE_CLAIM, price_lines
from agent_server.foundation.timeutil import utc
from agent_server.gateway.service import Caller
from tests.billing.conftest import Billed
from tests.billing.events_support import Live, account, engine
from tests.billing.events_support import live_billed as live_billed
from tests.billing.test_trial import subscribe

# models.yaml: gpt-4o-mini 0.15 / 0.60 EUR, gpt-4o 2.50 / 10.00 EUR per million tokens.
USAGE = [
    ("gpt-4o-mini", 1_000_000, 500_000),
    ("gpt-4o", 123_457, 10_000),
    ("agentgate-mock-small", 9_999, 9_999),
]
EXPECTED = {"gpt-4o-mini": 45, "gpt-4o": 41}  # 15 + 30; 30.86425 + 10 -> 41 (half up, once per model)


async def spend(billed: Billed, key: str, usage: list[tuple[str, int, int]]) -> None:
    """Usage rows as the gateway writes them for ``key``, flushed to the table."""
    gateway = billed.app.state.gateway
    caller = Caller(await gateway.keys.authenticate(key), {}, 0.0)
    for model, prompt, completion in usage:
        await gateway.record(
            caller, "chat", model, 200, "test", prompt_tokens=prompt, completion_tokens=completion
        )
    await gateway.usage.flush()


async def items_at_provider(billed: Billed, customer_id: str) -> list[dict[str, Any]]:
    """The customer's invoice items as the provider holds them."""
    if billed.stripe is not None:
        return billed.stripe.get("/v1/invoiceitems", customer=customer_id, limit=100).json()["data"]
    return await billed.app.state.billing.provider.store.owned("invoiceitem", customer_id)


async def reports(billed: Billed) -> list[UsageReport]:
    async with billed.app.state.services.db.session() as session:
        return list((await session.execute(select(UsageReport).order_by(UsageReport.period_start))).scalars())


def test_lines_are_priced_in_minor_units_half_up_once_per_model() -> None:
    prices = {"gpt-4o-mini": (15, 60), "gpt-4o": (250, 1000)}
    lines = {line["model"]: line["amount_minor"] for line in price_lines(USAGE, prices)}
    assert lines == {**EXPECTED, "agentgate-mock-small": 0}
    assert price_lines([("m", 1, 0)], {"m": (500_000, 0)})[0]["amount_minor"] == 1  # 0.5 rounds up
    assert price_lines([("m", 1, 0)], {"m": (499_999, 0)})[0]["amount_minor"] == 0


async def test_a_closed_period_is_reported_once_as_invoice_items(live_billed: Live) -> None:
    live, tenant = live_billed, live_billed.tenants["a"]
    live_key, sandbox_key = await live.keys()
    live.advance(-120)  # two minutes before the subscription starts (localstripe stamps it by its clock)
    await spend(live, live_key, [("gpt-4o", 1_000_000, 0)])  # in the trial, before the period: not billed
    live.advance(180)
    await subscribe(live)
    found = await account(live, tenant)
    assert found is not None and found.current_period_end is not None and found.customer_id
    await spend(live, live_key, USAGE)
    await spend(live, sandbox_key, [("gpt-4o", 5_000_000, 5_000_000)])  # sandbox keys are free
    before = len(await items_at_provider(live, found.customer_id))

    live.advance(found.current_period_end.timestamp() - live.clock.now() - 1)
    assert await engine(live).usage.run_once() == []  # the period has not ended yet
    live.advance(1 + SETTLE.total_seconds())
    [sent] = await engine(live).usage.run_once()
    assert await engine(live).usage.run_once() == []  # once

    [report] = await reports(live)
    assert report.id == sent and report.status == "reported" and report.currency == "EUR"
    assert report.amount_minor == sum(EXPECTED.values()) and len(report.provider_refs) == 2
    assert report.period_end.timestamp() == found.current_period_end.timestamp()
    items = await items_at_provider(live, found.customer_id)
    assert len(items) == before + 2  # nothing else was added
    ours = {item["id"]: item for item in items if item["id"] in report.provider_refs}
    assert sorted(item["amount"] for item in ours.values()) == sorted(EXPECTED.values())
    assert all(item["currency"] == "eur" for item in ours.values())
    assert any(
        "gpt-4o-mini: 1,000,000 input and 500,000 output tokens" in item["description"]
        for item in ours.values()
    )


@pytest.mark.parametrize("provider", ["sandbox"])  # localstripe ignores idempotency keys
async def test_a_claim_left_by_a_dead_process_is_taken_over_without_charging_twice(live_billed: Live) -> None:
    live, tenant = live_billed, live_billed.tenants["a"]
    live_key, _ = await live.keys()
    await subscribe(live)
    await spend(live, live_key, USAGE)
    found = await account(live, tenant)
    assert found is not None and found.current_period_end is not None and found.customer_id
    live.advance(found.current_period_end.timestamp() - live.clock.now() + SETTLE.total_seconds())
    usage = engine(live).usage
    # A process claimed the period and sent the first item, then died before marking it reported.
    [period] = await usage._closed_periods(utc(live.clock.now()))
    claimed = await usage._claim_new(period, utc(live.clock.now()))
    assert claimed is not None
    first = claimed.lines[0]
    await live.app.state.billing.provider.add_invoice_item(
        found.customer_id,
        first["amount_minor"],
        "EUR",
        "first",
        f"usage:{tenant}:{int(period.start.timestamp())}:{first['model']}",
    )
    assert await usage.run_once() == []  # a fresh claim is nobody else's to take
    live.advance(STALE_CLAIM.total_seconds() + 1)
    assert await usage.run_once() == [claimed.id]
    items = await items_at_provider(live, found.customer_id)
    usage_items = [item for item in items if item["id"] in (await reports(live))[0].provider_refs]
    assert sorted(item["amount"] for item in usage_items) == sorted(EXPECTED.values())  # one each


@pytest.mark.parametrize("provider", ["sandbox"])  # the sandbox renews on our clock; localstripe cannot
async def test_a_period_the_provider_renewed_first_is_billed_from_its_due_row(live_billed: Live) -> None:
    live, tenant = live_billed, live_billed.tenants["a"]
    live_key, _ = await live.keys()
    await subscribe(live)
    await spend(live, live_key, USAGE)
    found = await account(live, tenant)
    assert (
        found is not None and found.current_period_start is not None and found.current_period_end is not None
    )
    live.advance(found.current_period_end.timestamp() - live.clock.now() + 1)
    assert await live.app.state.billing.provider.advance() == 1  # renewal event: the period moved on
    [due] = await reports(live)
    assert due.status == "due" and due.period_end.timestamp() == found.current_period_end.timestamp()
    live.advance(SETTLE.total_seconds())
    assert await engine(live).usage.run_once() == [due.id]
    [reported] = await reports(live)
    assert reported.status == "reported" and reported.amount_minor == sum(EXPECTED.values())
