"""Spend per request in money: each usage row carries its cost (integer millionths of a minor unit,
from the one price table) and GET /admin/usage sums it per key and model, in total or per day."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml
from cryptography.fernet import Fernet

from agent_server.foundation.settings_llm import UpstreamConfig
from agent_server.knowledge.pack import shipped_content_dir
from tests.gateway.conftest import Harness, HarnessFactory
from tests.gateway.test_keys_settings import MESSAGES, create, sdk
from tests.llm.fake_upstream import FakeUpstream

DAY = 86_400
# The fake upstream reports 11 prompt and 5 completion tokens (one per chunk) for every answer.
PROMPT, COMPLETION = 11, 5


@pytest.fixture
def upstream() -> Iterator[FakeUpstream]:
    with FakeUpstream() as server:
        yield server


def priced(upstream: FakeUpstream) -> UpstreamConfig:
    return UpstreamConfig.model_validate(
        {
            "name": "up",
            "base_url": upstream.base_url,
            "models": {
                "gpt-4o-mini": "upstream-mini",  # priced by models.yaml: 0.15 / 0.60 EUR per MTok
                "acme-chat-1": {"price": {"input": 250_000, "output": 1_000_000}},  # 2,500 / 10,000 EUR
            },
        }
    )


def stored_costs(data_dir: Path) -> list[tuple[str, int, str | None]]:
    with closing(sqlite3.connect(data_dir / "agentgate.db")) as db:
        query = "SELECT model, cost_micros, currency FROM usage_records WHERE endpoint = 'chat' ORDER BY id"
        return db.execute(query).fetchall()


async def test_each_request_records_its_cost_and_the_usage_api_sums_it(
    make_harness: HarnessFactory, upstream: FakeUpstream, tmp_path: Path
) -> None:
    async with make_harness(mode="production", upstreams=[priced(upstream)]) as h:
        admin = await h.tenant("enterprise")
        created = (await create(h, admin)).json()
        async with sdk(h, created["key"]) as client:
            for model in ("gpt-4o-mini", "acme-chat-1"):
                await client.chat.completions.create(model=model, messages=MESSAGES)  # type: ignore[arg-type]
            stream = await client.chat.completions.create(
                model="acme-chat-1",
                messages=MESSAGES,  # type: ignore[arg-type]
                stream=True,
            )
            assert "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
        await h.gateway.usage.flush()
        mini, acme = PROMPT * 15 + COMPLETION * 60, PROMPT * 250_000 + COMPLETION * 1_000_000
        assert stored_costs(tmp_path) == [
            ("gpt-4o-mini", mini, "EUR"),
            ("acme-chat-1", acme, "EUR"),
            ("acme-chat-1", acme, "EUR"),
        ]
        usage = (await h.client.get("/admin/usage", headers=admin.headers)).json()
        assert usage["currency"] == "EUR"
        rows = {row["model"]: row for row in usage["data"]}
        assert (rows["gpt-4o-mini"]["cost_micros"], rows["gpt-4o-mini"]["cost"]) == (465, 0)
        # 2 x 7.75 cents = 15.5: 16 whole cents, half up; the micros stay exact.
        assert (rows["acme-chat-1"]["cost_micros"], rows["acme-chat-1"]["cost"]) == (2 * acme, 16)
        assert rows["acme-chat-1"]["requests"] == 2 and rows["acme-chat-1"]["key_id"] == created["id"]
        key = (await h.client.get(f"/admin/api-keys/{created['id']}", headers=admin.headers)).json()
        assert key["spend"]["cost_micros"] == mini + 2 * acme
        assert key["spend"]["tokens"] == 3 * (PROMPT + COMPLETION)


async def test_usage_per_day_and_between_days(make_harness: HarnessFactory, upstream: FakeUpstream) -> None:
    async with make_harness(mode="production", upstreams=[priced(upstream)]) as h:
        h.clock.advance(DAY - h.clock.now() % DAY + 3600)  # 01:00 UTC of a day
        admin = await h.tenant("enterprise")
        key = (await create(h, admin)).json()["key"]
        first_day = h.clock.now()
        await h.chat(key, model="acme-chat-1")
        h.clock.advance(DAY)
        await h.chat(key, model="acme-chat-1")
        await h.chat(key, model="acme-chat-1")
        admin.token = await h.login(admin.email)  # yesterday's session has expired
        days = (await h.client.get("/admin/usage?group_by=day", headers=admin.headers)).json()["data"]
        assert [(row["day"], row["requests"]) for row in days] == [
            (_day(first_day), 1),
            (_day(first_day + DAY), 2),
        ]
        assert days[1]["cost_micros"] == 2 * days[0]["cost_micros"] > 0
        later = await h.client.get(f"/admin/usage?start={_day(first_day + DAY)}", headers=admin.headers)
        assert [row["requests"] for row in later.json()["data"]] == [2]
        earlier = await h.client.get(f"/admin/usage?end={_day(first_day)}", headers=admin.headers)
        assert [row["requests"] for row in earlier.json()["data"]] == [1]
        bad = await h.client.get("/admin/usage?group_by=week", headers=admin.headers)
        assert bad.status_code == 400 and bad.json()["error"]["param"] == "group_by"


async def test_usage_days_are_only_yyyy_mm_dd(harness: Harness) -> None:
    # The document says format: date; a number was read as a Unix time (start=0: 1970-01-01).
    admin = await harness.tenant()
    for query in ("start=0", "end=1700000000", "start=2026-5-1", "end=2026-05-01T00:00:00"):
        bad = await harness.client.get(f"/admin/usage?{query}", headers=admin.headers)
        assert bad.status_code == 400, (query, bad.text)
        assert bad.json()["error"]["param"] == query.split("=")[0] and "YYYY-MM-DD" in bad.text
    good = await harness.client.get("/admin/usage?start=2026-05-01&end=2026-05-31", headers=admin.headers)
    assert good.status_code == 200, good.text


async def test_sandbox_keys_and_unpriced_models_cost_nothing(harness: Harness, tmp_path: Path) -> None:
    admin = await harness.tenant()
    key = (await create(harness, admin)).json()["key"]
    await harness.chat(key, model="gpt-4o-mini")  # priced, but a sandbox key is never charged
    await harness.gateway.usage.flush()
    assert stored_costs(tmp_path) == [("gpt-4o-mini", 0, None)]
    row = (await harness.client.get("/admin/usage", headers=admin.headers)).json()["data"][0]
    assert (row["cost"], row["cost_micros"]) == (0, 0)


async def test_a_catalogue_price_finer_than_a_minor_unit_stops_the_start(
    make_harness: HarnessFactory, tmp_path: Path
) -> None:
    models = yaml.safe_load((shipped_content_dir() / "models.yaml").read_text())
    models["models"][2]["input_price_per_mtok"] = 0.075  # 7.5 cents
    content = tmp_path / "content"
    content.mkdir()
    (content / "models.yaml").write_text(yaml.safe_dump(models))
    with pytest.raises(ValueError, match="not a whole number of minor units"):
        async with make_harness(content_dir=content):
            pass


def _day(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).date().isoformat()


@pytest.mark.postgres
async def test_spend_budgets_and_days_on_postgresql(
    make_harness: HarnessFactory, upstream: FakeUpstream, postgres_url: str
) -> None:
    shared = {  # a production deployment on a shared database sets its secrets (docs/deployment.md)
        "jwt_secret": "j" * 40,
        "chat_token_secret": "c" * 40,
        "encryption_key": Fernet.generate_key().decode(),
    }
    upstreams = [priced(upstream)]
    async with make_harness(database_url=postgres_url, mode="production", upstreams=upstreams, **shared) as h:
        admin = await h.tenant("enterprise")
        created = (await create(h, admin, budget={"period": "day", "max_spend": 10})).json()
        for _ in range(2):  # 7.75 cents each against 10 cents: the second one crosses it
            assert (await h.chat(created["key"], model="acme-chat-1")).status_code == 200
        assert (await h.chat(created["key"], model="acme-chat-1")).status_code == 402
        await h.gateway.usage.flush()
        await h.gateway.budgets.scan()  # the rows' verdict agrees with the counter
        assert created["id"] in h.gateway.budgets.blocked
        days = (await h.client.get("/admin/usage?group_by=day", headers=admin.headers)).json()["data"]
        assert [(row["day"], row["requests"], row["cost"]) for row in days] == [
            (_day(h.clock.now()), 2, 16),  # the refusal came at admission: no row, like a 429
        ]
        key = (await h.client.get(f"/admin/api-keys/{created['id']}", headers=admin.headers)).json()
        assert key["spend"]["cost_micros"] == 15_500_000 and key["spend"]["period"] == "day"
