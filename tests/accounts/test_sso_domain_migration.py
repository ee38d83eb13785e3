"""Migration 0016 keeps every domain claim when the table gets one row per (domain, tenant), lets
claims of one domain coexist but only one of them be verified, and folds them back on downgrade;
on SQLite and on PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import create_engine, text
from sqlalchemy.exc import IntegrityError

from agent_server.foundation.settings import Settings
from agent_server.storage.migrate import alembic_config
from tests.support.migrated import REAL_UPGRADE

BEFORE = ("0013_key_last_used", "0009_passkeys")  # the heads before 0016 (0007 is under 0009)
INSERT_PLAN = (
    "INSERT INTO plans (id, name, trial_days, scopes, models, features, updated_at) "
    "VALUES ('enterprise', 'Enterprise', 14, '[]', '[]', '[]', '2026-01-01 00:00:00')"
)
INSERT_TENANT = (
    "INSERT INTO tenants (id, name, plan_id, trial_ends_at, created_at, sso_enforced) "
    "VALUES (:id, :id, 'enterprise', '2026-01-01 00:00:00', '2026-01-01 00:00:00', false)"
)
INSERT_CLAIM = (
    "INSERT INTO tenant_domains (domain, tenant_id, verification_token, created_at, verified_at) "
    "VALUES (:domain, :tenant, 't', :created, :verified)"
)


def settings_for(tmp_path: Path, database_url: str | None) -> Settings:
    return Settings(data_dir=tmp_path, redis_url=None, database_url=database_url)


def claims(url: str) -> list[tuple[str, str, bool]]:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(
                text("SELECT domain, tenant_id, verified_at FROM tenant_domains ORDER BY domain, tenant_id")
            )
            return [(domain, tenant, verified is not None) for domain, tenant, verified in rows]
    finally:
        engine.dispose()


def run(url: str, *statements: tuple[str, dict[str, object]]) -> None:
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            for statement, values in statements:
                conn.execute(text(statement), values)
    finally:
        engine.dispose()


def downgrade(settings: Settings, revision: str) -> None:
    engine = create_engine(settings.sync_database_url)
    config = alembic_config(settings)
    try:
        with engine.begin() as connection:
            config.attributes["connection"] = connection
            command.downgrade(config, revision)
    finally:
        engine.dispose()


def check(tmp_path: Path, database_url: str | None) -> None:
    settings = settings_for(tmp_path, database_url)
    url = settings.sync_database_url
    for head in BEFORE:
        REAL_UPGRADE(settings, head)
    run(
        url,
        (INSERT_PLAN, {}),
        *[(INSERT_TENANT, {"id": tenant}) for tenant in ("t_a", "t_b")],
        (INSERT_CLAIM, {"domain": "a.test", "tenant": "t_a", "created": "2026-01-02", "verified": None}),
        (
            INSERT_CLAIM,
            {"domain": "b.test", "tenant": "t_b", "created": "2026-01-02", "verified": "2026-01-03"},
        ),
    )
    REAL_UPGRADE(settings)
    assert claims(url) == [("a.test", "t_a", False), ("b.test", "t_b", True)]

    # Both tenants may claim a.test; only one claim of a domain may be verified.
    later = {"domain": "a.test", "tenant": "t_b", "created": "2026-01-04", "verified": "2026-01-05"}
    run(url, (INSERT_CLAIM, later))
    with pytest.raises(IntegrityError):
        run(url, ("UPDATE tenant_domains SET verified_at = '2026-01-06' WHERE tenant_id = 't_a'", {}))
    assert claims(url) == [("a.test", "t_a", False), ("a.test", "t_b", True), ("b.test", "t_b", True)]

    # Down again: one row per domain, the verified claim winning over an older pending one.
    downgrade(settings, "0016_domain_claims-1")
    assert claims(url) == [("a.test", "t_b", True), ("b.test", "t_b", True)]
    REAL_UPGRADE(settings)
    assert claims(url) == [("a.test", "t_b", True), ("b.test", "t_b", True)]


def test_the_claims_survive_migration_0016_on_sqlite(tmp_path: Path) -> None:
    check(tmp_path, None)


@pytest.mark.postgres
def test_the_claims_survive_migration_0016_on_postgresql(tmp_path: Path, empty_postgres_url: str) -> None:
    check(tmp_path, empty_postgres_url)
