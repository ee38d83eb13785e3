"""``last_used_at`` of a key: moved forward by the usage writer with each batch it writes (never
back), shown by ``GET /admin/api-keys``, ``agentgate keys list`` and the dashboard's key list, and
backfilled from the usage rows by the migration that adds it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy import create_engine, select

from agent_server.foundation.settings import Settings
from agent_server.gateway import provision
from agent_server.gateway.tables import ApiKey
from agent_server.gateway.usage import UsageRow, UsageWriter
from agent_server.storage.db import Database
from agent_server.storage.migrate import upgrade
from tests.gateway.conftest import Harness
from tests.support.migrated import REAL_UPGRADE

T0 = 1_800_000_000.0


def used(key_id: str, at: float, status: int = 200) -> UsageRow:
    return UsageRow("ten_x", key_id, "m", "chat", 3, 4, 1.0, status, "mock", False, at)


@pytest.fixture(params=["sqlite", "postgres"])
async def settings_db(
    tmp_path: Path, request: pytest.FixtureRequest
) -> AsyncIterator[tuple[Settings, Database]]:
    url = request.getfixturevalue("postgres_url") if request.param == "postgres" else None
    settings = Settings(data_dir=tmp_path, redis_url=None, database_url=url)
    upgrade(settings)
    database = Database(settings)
    yield settings, database
    await database.dispose()


async def last_used(db: Database, key_id: str) -> float | None:
    async with db.session() as session:
        value = (await session.execute(select(ApiKey.last_used_at).where(ApiKey.id == key_id))).scalar_one()
    return None if value is None else value.timestamp()


async def test_the_writer_moves_last_used_forward_only(settings_db: tuple[Settings, Database]) -> None:
    settings, db = settings_db
    tenant = await provision.create_tenant(settings, "Acme", "professional", 600)
    (a, _), (b, _) = [await provision.create_key(settings, tenant.id, n, ["chat"]) for n in ("a", "b")]
    writer = UsageWriter(db)
    for row in (
        used(a.id, T0 + 5),
        used(a.id, T0 + 9, status=429),
        used(a.id, T0 + 7),
        used("no_such_key", T0),
    ):
        writer.record(row)
    assert await writer.flush() == 4
    assert await last_used(db, a.id) == T0 + 9  # the newest row of the batch, a refusal included
    assert await last_used(db, b.id) is None  # never used

    writer.record(used(a.id, T0 + 2))  # a late batch of older rows leaves it as is
    writer.record(used(b.id, T0 + 3))
    await writer.flush()
    assert (await last_used(db, a.id), await last_used(db, b.id)) == (T0 + 9, T0 + 3)


async def test_the_api_and_the_dashboard_show_when_a_key_was_last_used(harness: Harness) -> None:
    admin = await harness.tenant()
    (key_id, key), (idle_id, _) = await harness.key(admin), await harness.key(admin)
    harness.clock.advance(60)
    assert (await harness.chat(key)).status_code == 200
    listed = (await harness.client.get("/admin/api-keys", headers=admin.headers)).json()["data"]
    times = {k["id"]: k["last_used_at"] for k in listed}
    assert times[key_id] == int(harness.clock.now()) and times[idle_id] is None
    one = await harness.client.get(f"/admin/api-keys/{key_id}", headers=admin.headers)
    assert one.json()["last_used_at"] == int(harness.clock.now())


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_populated_database_migrates_and_last_used_is_backfilled(
    tmp_path: Path, request: pytest.FixtureRequest, backend: str
) -> None:
    url = request.getfixturevalue("empty_postgres_url") if backend == "postgres" else None
    settings = Settings(data_dir=tmp_path, redis_url=None, database_url=url)
    # The schema just before the column, without the branches after it: on SQLite the rest copies
    # tables that rows of other tables refer to (tenants), which must not trip the foreign keys.
    REAL_UPGRADE(settings, "0012_keys_spend_byok")
    engine = create_engine(settings.sync_database_url)
    stamp = sa.DateTime(timezone=True)
    plans = sa.table(
        "plans",
        *(sa.column(c) for c in ("id", "name", "trial_days", "scopes", "models", "features")),
        sa.column("updated_at", stamp),
    )
    tenants = sa.table(
        "tenants",
        sa.column("id"),
        sa.column("name"),
        sa.column("plan_id"),
        sa.column("trial_ends_at", stamp),
        sa.column("created_at", stamp),
    )
    keys = sa.table(
        "api_keys",
        *(
            sa.column(c)
            for c in ("id", "tenant_id", "name", "scopes", "environment", "digest", "prefix", "last4")
        ),
        sa.column("created_at", stamp),
    )
    usage = sa.table(
        "usage_records",
        *(
            sa.column(c)
            for c in (
                "tenant_id",
                "key_id",
                "model",
                "endpoint",
                "prompt_tokens",
                "completion_tokens",
                "latency_ms",
                "status",
                "backend",
                "stream",
            )
        ),
        sa.column("created_at", stamp),
    )
    start, newest = datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 3, 5, 12, 30, tzinfo=UTC)
    try:
        with engine.begin() as conn:
            conn.execute(
                plans.insert(),
                [
                    {
                        "id": "p",
                        "name": "p",
                        "trial_days": 14,
                        "scopes": "[]",
                        "models": "[]",
                        "features": "[]",
                        "updated_at": start,
                    }
                ],
            )
            conn.execute(
                tenants.insert(),
                [{"id": "ten_m", "name": "M", "plan_id": "p", "trial_ends_at": start, "created_at": start}],
            )
            conn.execute(
                keys.insert(),
                [
                    {
                        "id": k,
                        "tenant_id": "ten_m",
                        "name": k,
                        "scopes": "[]",
                        "environment": "test",
                        "digest": k,
                        "prefix": "sk_test_",
                        "last4": "abcd",
                        "created_at": start,
                    }
                    for k in ("key_used", "key_idle")
                ],
            )
            conn.execute(
                usage.insert(),
                [
                    {
                        "tenant_id": "ten_m",
                        "key_id": "key_used",
                        "model": "m",
                        "endpoint": "chat",
                        "prompt_tokens": 1,
                        "completion_tokens": 1,
                        "latency_ms": 1.0,
                        "status": 200,
                        "backend": "mock",
                        "stream": False,
                        "created_at": at,
                    }
                    for at in (datetime(2026, 2, 1, 10, tzinfo=UTC), newest)
                ],
            )
        REAL_UPGRADE(settings)
        last_used = sa.table("api_keys", sa.column("id"), sa.column("last_used_at", stamp))
        with engine.connect() as conn:
            rows = dict(conn.execute(sa.select(last_used.c.id, last_used.c.last_used_at)).all())
    finally:
        engine.dispose()
    assert rows["key_idle"] is None
    assert rows["key_used"].replace(tzinfo=None) == newest.replace(tzinfo=None)
