"""Migration 0002_gateway: matches the SQLModel tables, and the gateway runs on real PostgreSQL."""

from __future__ import annotations

from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine
from sqlmodel import SQLModel

from agent_server.foundation.settings import Settings
from agent_server.storage import tables  # noqa: F401  (registers every table)
from tests.gateway.conftest import Harness, HarnessFactory, key_headers

GATEWAY_TABLES = {"plans", "tenants", "users", "api_keys", "usage_records"}


def _table_of(diff: Any) -> str | None:
    item = diff[0] if isinstance(diff, list) else diff
    for part in item[1:] if isinstance(item, tuple) else ():
        name = getattr(part, "name", None) if not isinstance(part, str) else part
        table = getattr(part, "table", None)
        if table is not None:
            return table.name
        if name in GATEWAY_TABLES:
            return name
    return None


def schema_drift(settings: Settings) -> list[Any]:
    engine = create_engine(settings.sync_database_url)
    try:
        with engine.connect() as connection:
            context = MigrationContext.configure(connection, opts={"compare_type": True})
            diffs = compare_metadata(context, SQLModel.metadata)
    finally:
        engine.dispose()
    return [diff for diff in diffs if _table_of(diff) in GATEWAY_TABLES]


async def exercise(harness: Harness, email: str, password: str) -> None:
    """Bootstrap admin logs in, makes a key, chats, sees usage, rotates and revokes."""
    token = await harness.login(email, password)
    admin_headers = {"Authorization": f"Bearer {token}"}
    created = await harness.client.post(
        "/admin/api-keys", json={"name": "pg", "scopes": ["chat", "models"]}, headers=admin_headers
    )
    assert created.status_code == 201, created.text
    key_id, key = created.json()["id"], created.json()["key"]
    assert (await harness.chat(key)).status_code == 200
    assert (await harness.chat(key, stream=True)).status_code == 200
    usage = (await harness.client.get("/admin/usage", headers=admin_headers)).json()["data"]
    assert any(row["key_id"] == key_id and row["requests"] == 2 for row in usage)
    rotated = await harness.client.post("/admin/keys/rotate", json={"key_id": key_id}, headers=admin_headers)
    assert rotated.status_code == 201
    assert (await harness.chat(key)).status_code == 401
    new_id, new_key = rotated.json()["id"], rotated.json()["key"]
    assert (
        await harness.client.delete(f"/admin/api-keys/{new_id}", headers=admin_headers)
    ).status_code == 200
    assert (await harness.client.get("/v1/models", headers=key_headers(new_key))).status_code == 401


async def test_migration_matches_the_tables_on_sqlite(harness: Harness) -> None:
    assert schema_drift(harness.gateway.services.settings) == []


@pytest.mark.postgres
async def test_the_gateway_runs_on_postgresql(make_harness: HarnessFactory, postgres_url: str) -> None:
    email, password = "admin@pg.example", "postgres-admin-password"
    async with make_harness(database_url=postgres_url, admin_email=email, admin_password=password) as harness:
        await exercise(harness, email, password)
        assert schema_drift(harness.gateway.services.settings) == []
