"""GET /admin/usage as the dashboard reads it: the period split by day, model and key (with the keys'
names), its totals, and the month so far against the plan (live tokens against the token quota,
spend, the plan's price); and one reading of the period, whose days outside the calendar are 400s
naming the parameter (they were 500s: OverflowError)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from cryptography.fernet import Fernet

from agent_server.foundation.settings_llm import UpstreamConfig
from agent_server.gateway import repository as repo
from agent_server.gateway.usage import UsageRow
from tests.gateway.conftest import Harness, HarnessFactory, TenantAdmin
from tests.llm.fake_upstream import FakeUpstream

# The fake upstream reports 11 prompt and 5 completion tokens for every answer; gpt-4o-mini costs
# 15 and 60 cents per million tokens (models.yaml): 11 * 15 + 5 * 60 = 465 millionths of a cent.
LIVE_TOKENS, LIVE_COST = 16, 465
DAY = 86_400


@pytest.fixture
def upstream() -> Iterator[FakeUpstream]:
    with FakeUpstream() as server:
        yield server


def upstreams(upstream: FakeUpstream) -> list[UpstreamConfig]:
    return [
        UpstreamConfig.model_validate(
            {"name": "up", "base_url": upstream.base_url, "models": {"gpt-4o-mini": "m"}}
        )
    ]


def _day(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).date().isoformat()


async def live_key(h: Harness, admin: TenantAdmin, name: str) -> tuple[str, str]:
    body = {"name": name, "scopes": ["chat", "models"]}
    created = (await h.client.post("/admin/api-keys", json=body, headers=admin.headers)).json()
    assert created["environment"] == "live", created
    return created["id"], created["key"]


async def usage(h: Harness, admin: TenantAdmin, query: str = "") -> dict[str, Any]:
    answer = await h.client.get(f"/admin/usage{query}", headers=admin.headers)
    assert answer.status_code == 200, answer.text
    return answer.json()


async def month_against_the_plan(h: Harness) -> None:
    """The scenario, on whichever database the harness has."""
    assert _day(h.clock.now()) == "2027-01-15"  # ManualClock's start: the middle of a month
    admin = await h.tenant("starter")
    backend_id, backend = await live_key(h, admin, "backend")
    batch_id, batch = await live_key(h, admin, "batch")
    # A sandbox key in a production deployment: answered by the mock, never charged, not in the quota.
    record, sandbox = repo.new_key(h.clock.now(), admin.id, "ci", ["chat"], "test")
    await repo.add_key(h.gateway.db, record)
    last_month = h.clock.now() - 30 * DAY
    await h.gateway.usage.append(
        UsageRow(admin.id, backend_id, "gpt-4o-mini", "chat", 1000, 1000, 5.0, 200, "up", False, last_month)
    )

    h.clock.advance(-DAY)  # yesterday
    assert (await h.chat(backend, model="gpt-4o-mini")).status_code == 200
    h.clock.advance(DAY)
    for _ in range(2):
        assert (await h.chat(backend, model="gpt-4o-mini")).status_code == 200
    assert (await h.chat(batch, model="gpt-4o-mini")).status_code == 200
    assert (await h.chat(batch, model="no-such-model")).status_code == 400  # an error row, no tokens
    assert (await h.chat(sandbox, model="gpt-4o-mini")).status_code == 200

    body = await usage(h, admin)
    assert body["start"] is None and body["end"] is None  # no period: every row
    keys = {row["key_id"]: row for row in body["by_key"]}
    assert body["by_key"][0]["key_id"] == backend_id  # most tokens first
    assert (keys[backend_id]["name"], keys[backend_id]["environment"], keys[backend_id]["status"]) == (
        "backend",
        "live",
        "active",
    )
    assert keys[backend_id]["redacted"].startswith("sk_live_…")
    assert keys[backend_id]["requests"] == 4  # last month's row too
    assert keys[batch_id]["requests"] == 2 and keys[batch_id]["errors"] == 1
    assert keys[batch_id]["total_tokens"] == LIVE_TOKENS and keys[batch_id]["cost_micros"] == LIVE_COST
    sandbox_row = keys[record.id]
    assert (sandbox_row["name"], sandbox_row["environment"], sandbox_row["cost_micros"]) == ("ci", "test", 0)
    sandbox_tokens = sandbox_row["total_tokens"]
    assert sandbox_tokens > 0

    models = {row["model"]: row for row in body["by_model"]}
    assert models["no-such-model"]["requests"] == models["no-such-model"]["errors"] == 1
    assert models["gpt-4o-mini"]["requests"] == 6
    today, yesterday = _day(h.clock.now()), _day(h.clock.now() - DAY)
    assert [(row["day"], row["requests"]) for row in body["by_day"]] == [
        (_day(last_month), 1),
        (yesterday, 1),
        (today, 5),
    ]  # days without requests are not listed
    totals = body["totals"]
    assert totals["requests"] == 7 == sum(row["requests"] for row in body["data"])
    assert totals["cost_micros"] == sum(row["cost_micros"] for row in body["by_key"])
    assert totals["total_tokens"] == 2000 + 4 * LIVE_TOKENS + sandbox_tokens

    month = body["month_to_date"]
    assert (month["start"], month["end"], month["renews_at"]) == (
        "2027-01-01",
        "2027-01-31",
        "2027-02-01T00:00:00Z",
    )
    assert month["requests"] == 6 and month["errors"] == 1  # not last month's row
    assert month["total_tokens"] == 4 * LIVE_TOKENS + sandbox_tokens
    assert month["cost_micros"] == 4 * LIVE_COST and month["currency"] == "EUR"
    assert month["quota"] == {
        "monthly_tokens": 2_000_000,
        "used": 4 * LIVE_TOKENS,  # live keys only, as the quota gate counts
        "remaining": 2_000_000 - 4 * LIVE_TOKENS,
        "percent": 0.0,
    }
    assert month["plan"] == {
        "id": "starter",
        "name": "Starter",
        "price": {"amount_minor": 4900, "currency": "EUR", "interval": "month"},
    }

    # A period: only its days; the month so far is the same whatever the period.
    period = await usage(h, admin, f"?start={yesterday}&end={yesterday}&group_by=day")
    assert (period["start"], period["end"]) == (yesterday, yesterday)
    assert [(r["key_id"], r["day"], r["requests"]) for r in period["data"]] == [(backend_id, yesterday, 1)]
    assert period["totals"]["requests"] == 1 and period["month_to_date"] == month

    h.clock.advance(17 * DAY)  # 2027-02-01 08:00: a new month
    admin.token = await h.login(admin.email)
    renewed = (await usage(h, admin))["month_to_date"]
    assert (renewed["start"], renewed["requests"], renewed["quota"]["used"]) == ("2027-02-01", 0, 0)


async def test_the_report_splits_by_day_model_and_key_and_counts_the_month_against_the_plan(
    make_harness: HarnessFactory, upstream: FakeUpstream
) -> None:
    async with make_harness(mode="production", upstreams=upstreams(upstream)) as h:
        await month_against_the_plan(h)


@pytest.mark.postgres
async def test_the_same_report_on_postgresql(
    make_harness: HarnessFactory, upstream: FakeUpstream, postgres_url: str
) -> None:
    secrets = {
        "jwt_secret": "j" * 40,
        "chat_token_secret": "c" * 40,
        "encryption_key": Fernet.generate_key().decode(),
    }
    async with make_harness(
        database_url=postgres_url, mode="production", upstreams=upstreams(upstream), **secrets
    ) as h:
        await month_against_the_plan(h)


async def test_a_plan_without_a_quota_or_a_list_price_says_so(harness: Harness) -> None:
    admin = await harness.tenant("enterprise")
    month = (await usage(harness, admin))["month_to_date"]
    assert month["quota"] == {"monthly_tokens": None, "used": 0, "remaining": None, "percent": None}
    assert month["plan"] == {"id": "enterprise", "name": "Enterprise", "price": None}
    assert month["requests"] == 0 and month["cost"] == 0


@pytest.mark.parametrize(
    ("query", "param"),
    [
        ("end=9999-12-31", "end"),  # was a 500: the day after it does not exist
        ("start=9999-12-31", "start"),
        ("start=0001-01-01", "start"),
        ("end=0001-01-01", "end"),
        ("start=1969-12-31&end=2026-01-01", "start"),
        ("start=2026-01-02&end=2026-01-01", "start"),
        ("group_by=day&end=9999-12-31", "end"),
    ],
)
async def test_days_outside_the_calendar_are_a_400_naming_the_parameter(
    harness: Harness, query: str, param: str
) -> None:
    admin = await harness.tenant()
    answer = await harness.client.get(f"/admin/usage?{query}", headers=admin.headers)
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["param"] == param and error["type"] == "invalid_request_error", error


async def test_the_calendar_limits_themselves_are_a_period(harness: Harness) -> None:
    admin = await harness.tenant()
    key = await harness.key(admin)
    assert (await harness.chat(key[1])).status_code == 200
    for query in ("start=1970-01-01&end=9999-12-30", "group_by=day&end=9999-12-30", "end=1970-01-01"):
        body = await usage(harness, admin, f"?{query}")
        expected = 0 if query == "end=1970-01-01" else 1
        assert body["totals"]["requests"] == expected, (query, body)
