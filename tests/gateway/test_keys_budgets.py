"""Key budgets: tokens or money per day, month or in total; over budget is 402 budget_exceeded until
the next period; counters live in the KV (shared through Redis) and are reconciled from usage rows."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from agent_server.foundation.settings_llm import UpstreamConfig
from agent_server.foundation.timeutil import month_bounds
from tests.gateway.conftest import MODEL, Harness, HarnessFactory, TenantAdmin, key_headers
from tests.gateway.test_keys_settings import MESSAGES, create, sdk
from tests.llm.fake_upstream import FakeUpstream

DAY = 86_400


@pytest.fixture
def upstream() -> Iterator[FakeUpstream]:
    with FakeUpstream() as server:
        yield server


async def budget_key(h: Harness, admin: TenantAdmin, **budget: Any) -> tuple[str, str]:
    response = await create(h, admin, budget=budget)
    assert response.status_code == 201, response.text
    return response.json()["id"], response.json()["key"]


def assert_budget_refusal(response: Any) -> None:
    assert response.status_code == 402, response.text
    error = response.json()["error"]
    assert error["code"] == "budget_exceeded" and error["type"] == "insufficient_quota"


async def test_a_key_over_its_daily_token_budget_gets_402_until_the_next_day(harness: Harness) -> None:
    admin = await harness.tenant()
    _, key = await budget_key(harness, admin, period="day", max_tokens=1)
    assert (await harness.chat(key)).status_code == 200  # nothing spent yet: served, and crosses it
    refused = await harness.chat(key, stream=True)
    assert_budget_refusal(refused)
    assert "daily budget of 1 tokens" in refused.json()["error"]["message"]
    assert refused.headers["X-RateLimit-Remaining"]  # admitted and counted, like every refusal
    async with sdk(harness, key) as client:
        with pytest.raises(openai.APIStatusError) as seen:
            await client.chat.completions.create(model=MODEL, messages=MESSAGES)  # type: ignore[arg-type]
        assert seen.value.status_code == 402 and seen.value.code == "budget_exceeded"
        assert [m.id async for m in client.models.list()]  # listing models spends nothing
    other = (await create(harness, admin)).json()["key"]
    assert (await harness.chat(other)).status_code == 200  # the budget is the key's, not the tenant's
    harness.clock.advance(DAY - harness.clock.now() % DAY)  # the first second of the next UTC day
    assert (await harness.chat(key)).status_code == 200
    assert_budget_refusal(await harness.chat(key))


async def test_money_budgets_count_the_cost_and_a_month_renews_them(
    make_harness: HarnessFactory, upstream: FakeUpstream
) -> None:
    # 11 prompt tokens at 10,000.00 EUR per million: 11 cents a request against a 10-cent budget.
    dear = UpstreamConfig.model_validate(
        {
            "name": "dear",
            "base_url": upstream.base_url,
            "models": {"dear-1": {"price": {"input": 1_000_000, "output": 0}}},
        }
    )
    async with make_harness(mode="production", upstreams=[dear]) as h:
        admin = await h.tenant("enterprise")
        key_id, key = await budget_key(h, admin, period="month", max_spend=10)
        assert (await h.chat(key, model="dear-1")).status_code == 200
        refused = await h.chat(key, model="dear-1")
        assert_budget_refusal(refused)
        assert "monthly budget of 0.10 EUR" in refused.json()["error"]["message"]
        shown = (await h.client.get(f"/admin/api-keys/{key_id}", headers=admin.headers)).json()["spend"]
        assert (shown["cost_micros"], shown["cost"], shown["currency"]) == (11_000_000, 11, "EUR")
        _, following = month_bounds(h.clock.now())
        h.clock.advance(following.timestamp() - h.clock.now())
        assert (await h.chat(key, model="dear-1")).status_code == 200


async def test_a_total_budget_does_not_renew_but_can_be_raised(harness: Harness) -> None:
    admin = await harness.tenant()
    key_id, key = await budget_key(harness, admin, period="total", max_tokens=1)
    await harness.chat(key)
    harness.clock.advance(40 * DAY)
    refused = await harness.chat(key)
    assert_budget_refusal(refused)
    assert "does not renew" in refused.json()["error"]["message"]
    admin.token = await harness.login(admin.email)  # the session of 40 days ago has expired
    raised = await harness.client.patch(
        f"/admin/api-keys/{key_id}",
        json={"budget": {"period": "total", "max_tokens": 1_000_000}},
        headers=admin.headers,
    )
    assert raised.status_code == 200 and raised.json()["spend"]["tokens"] > 0
    assert (await harness.chat(key)).status_code == 200


async def test_spend_before_a_budget_was_set_counts_at_once(harness: Harness) -> None:
    admin = await harness.tenant()
    created = (await create(harness, admin)).json()
    assert (await harness.chat(created["key"])).status_code == 200  # no budget: no counter anywhere
    patched = await harness.client.patch(
        f"/admin/api-keys/{created['id']}",
        json={"budget": {"period": "day", "max_tokens": 1}},
        headers=admin.headers,
    )
    assert patched.json()["spend"]["tokens"] > 0  # read from the usage rows
    # The counter was raised to what the usage rows say, so the very next request is refused.
    assert_budget_refusal(await harness.chat(created["key"]))


async def test_a_restarted_process_restores_the_counters_from_the_usage_rows(
    make_harness: HarnessFactory, tmp_path: Path
) -> None:
    data_dir = tmp_path / "shared"
    async with make_harness(data_dir=data_dir) as first:
        _, key = await budget_key(first, await first.tenant(), period="month", max_tokens=1)
        assert (await first.chat(key)).status_code == 200
    async with make_harness(data_dir=data_dir) as second:  # a new in-process KV: counters gone
        await second.gateway.budgets.scan()
        assert_budget_refusal(await second.chat(key))


async def test_the_rows_alone_refuse_when_the_kv_cannot_be_read(harness: Harness) -> None:
    admin = await harness.tenant()
    _, key = await budget_key(harness, admin, period="day", max_tokens=1)
    await harness.chat(key)
    await harness.gateway.usage.flush()
    await harness.gateway.budgets.scan()
    kv = harness.gateway.services.kv

    async def unreachable(_: str) -> bytes | None:
        raise ConnectionError("the KV is down")

    kv.get = unreachable  # type: ignore[method-assign]
    assert_budget_refusal(await harness.chat(key))
    plain = (await create(harness, admin)).json()["key"]
    assert (await harness.client.get("/v1/models", headers=key_headers(plain))).status_code == 200


@pytest.mark.redis
async def test_two_processes_sharing_redis_count_one_budget(
    make_harness: HarnessFactory, redis_url: str, tmp_path: Path
) -> None:
    async with (
        make_harness(redis_url=redis_url, data_dir=tmp_path) as a,
        make_harness(redis_url=redis_url, data_dir=tmp_path) as b,
    ):
        assert type(a.gateway.services.kv).__name__ == "RedisKV"
        _, key = await budget_key(a, await a.tenant(), period="day", max_tokens=1)
        assert (await a.chat(key)).status_code == 200
        # b never served this key and has scanned no row of it: the shared counter refuses it.
        assert_budget_refusal(await b.chat(key))
        assert_budget_refusal(await a.chat(key))
