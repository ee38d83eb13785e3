"""Migration 0017_request_log on a database with usage and keys from before: rows kept with the new
columns empty, the log's indexes in place of (tenant_id, created_at), and back again by downgrade;
on SQLite and on PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import Engine, create_engine, inspect, text

from agent_server.foundation.settings import Settings
from agent_server.storage.migrate import alembic_config
from tests.support.migrated import REAL_UPGRADE

BEFORE, REVISION = "0015_stored_responses", "0017_request_log"
LOG_INDEXES = {
    "ix_usage_records_tenant_time",
    "ix_usage_records_tenant_key_time",
    "ix_usage_records_tenant_model_time",
    "ix_usage_records_tenant_endpoint_time",
    "ix_usage_records_tenant_class_time",
    "ix_usage_records_tenant_request",
}
SEED = [
    "INSERT INTO plans (id, name, requests_per_minute, monthly_token_quota, trial_days, scopes, models, features,"
    " updated_at) VALUES ('starter', 'Starter', 60, NULL, 14, '[]', '[]', '[]', '2026-01-01 00:00:00+00')",
    "INSERT INTO tenants (id, name, plan_id, trial_ends_at, created_at)"
    " VALUES ('ten_old', 'Old', 'starter', '2026-01-01 00:00:00+00', '2026-01-01 00:00:00+00')",
    "INSERT INTO api_keys (id, tenant_id, name, scopes, environment, digest, prefix, last4, created_at)"
    " VALUES ('key_old', 'ten_old', 'old', '[]', 'test', 'd1', 'sk_test_', 'abcd', '2026-01-01 00:00:00+00')",
    "INSERT INTO usage_records (tenant_id, key_id, model, endpoint, prompt_tokens, completion_tokens, latency_ms,"
    " status, backend, stream, created_at) VALUES ('ten_old', 'key_old', 'm', 'chat', 3, 4, 1.5, 200, 'mock',"
    " false, '2026-01-02 00:00:00+00')",
]


def index_names(engine: Engine) -> set[str]:
    """Every index of usage_records (SQLAlchemy's inspector skips SQLite's expression indexes)."""
    sql = (
        "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'usage_records'"
        if engine.dialect.name == "sqlite"
        else "SELECT indexname FROM pg_indexes WHERE tablename = 'usage_records'"
    )
    with engine.connect() as conn:
        return set(conn.execute(text(sql)).scalars())


def check(settings: Settings) -> None:
    REAL_UPGRADE(settings, BEFORE)
    engine = create_engine(settings.sync_database_url)
    try:
        with engine.begin() as conn:
            for statement in SEED:
                conn.execute(text(statement))
        REAL_UPGRADE(settings, REVISION)
        schema = inspect(engine)
        indexes = index_names(engine)
        assert indexes >= LOG_INDEXES and "ix_usage_records_tenant_created" not in indexes
        assert "request_bodies" in schema.get_table_names()
        with engine.connect() as conn:
            row = conn.execute(text("SELECT key_id, request_id, upstream, ttft_ms FROM usage_records")).one()
            assert tuple(row) == ("key_old", None, None, None)
            assert conn.execute(text("SELECT log_bodies_days FROM api_keys")).scalar_one() is None

        config = alembic_config(settings)
        with engine.begin() as conn:  # the migrations run on the connection they are handed
            config.attributes["connection"] = conn
            command.downgrade(config, f"{REVISION}-1")
        schema = inspect(engine)
        indexes = index_names(engine)
        assert "ix_usage_records_tenant_created" in indexes and not LOG_INDEXES & indexes
        assert "request_bodies" not in schema.get_table_names()
        assert "request_id" not in {c["name"] for c in schema.get_columns("usage_records")}
        with engine.connect() as conn:
            assert conn.execute(text("SELECT count(*) FROM usage_records")).scalar_one() == 1
    finally:
        engine.dispose()


def test_on_sqlite(tmp_path: Path) -> None:
    check(Settings(data_dir=tmp_path, redis_url=None, database_url=None))


@pytest.mark.postgres
def test_on_postgresql(tmp_path: Path, empty_postgres_url: str) -> None:
    check(Settings(data_dir=tmp_path, redis_url=None, database_url=empty_postgres_url))
