"""Migration 0019_members on a database with users made before roles: the oldest ``tenant:admin`` of
each tenant becomes its owner, the other ``tenant:admin`` users admins, the rest keep no role; and the
app then treats them so (the owner may hand ownership over, the others may not)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, text

from agent_server.foundation.settings import Settings
from agent_server.storage.migrate import alembic_config
from tests.support.migrated import REAL_UPGRADE

MIGRATION = "0019_members"
USERS = [  # id, tenant, permissions, created (seconds)
    ("usr_a1", "ten_a", ["tenant:admin"], 1),
    ("usr_a2", "ten_a", ["platform:admin", "tenant:admin"], 2),
    ("usr_a3", "ten_a", [], 3),
    ("usr_b1", "ten_b", [], 1),
    ("usr_b2", "ten_b", ["tenant:admin"], 5),
]


def fill(url: str) -> None:
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO plans (id, name, trial_days, scopes, models, features, updated_at) "
                "VALUES ('starter', 'Starter', 14, '[]', '[]', '[]', :at)"
            ),
            {"at": "2026-01-01 00:00:00+00:00"},
        )
        for tenant in ("ten_a", "ten_b"):
            conn.execute(
                text(
                    "INSERT INTO tenants (id, name, plan_id, trial_ends_at, created_at, sso_enforced) "
                    "VALUES (:id, :id, 'starter', :at, :at, false)"
                ),
                {"id": tenant, "at": "2026-01-01 00:00:00+00:00"},
            )
        for user_id, tenant, permissions, second in USERS:
            conn.execute(
                text(
                    "INSERT INTO users (id, tenant_id, email, permissions, created_at, token_version) "
                    "VALUES (:id, :tenant, :email, :permissions, :at, 0)"
                ),
                {
                    "id": user_id,
                    "tenant": tenant,
                    "email": f"{user_id}@example.com",
                    "permissions": json.dumps(permissions),
                    "at": f"2026-01-01 00:00:{second:02d}+00:00",
                },
            )
    engine.dispose()


def everything_but_the_migration(settings: Settings) -> list[str]:
    """Every head that does not build on this migration, and what it revises: the schema just before
    it ran (later migrations of its branch wait, too)."""
    script = ScriptDirectory.from_config(alembic_config(settings))
    down = script.get_revision(MIGRATION).down_revision
    before = [down] if isinstance(down, str) else list(down or ())

    def builds_on_it(head: str) -> bool:
        return any(revision.revision == MIGRATION for revision in script.iterate_revisions(head, "base"))

    return [head for head in script.get_heads() if not builds_on_it(head)] + before


def roles_in(url: str) -> dict[str, str | None]:
    engine = create_engine(url)
    with engine.connect() as conn:
        found = {row[0]: row[1] for row in conn.execute(text("SELECT id, role FROM users"))}
    engine.dispose()
    return found


@pytest.mark.parametrize("database", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_roles_are_backfilled_from_tenant_admin(
    database: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = request.getfixturevalue("empty_postgres_url") if database == "postgres" else None
    settings = Settings(data_dir=tmp_path, redis_url=None, database_url=url)
    for revision in everything_but_the_migration(settings):
        REAL_UPGRADE(settings, revision)
    fill(settings.sync_database_url)
    REAL_UPGRADE(settings)
    assert roles_in(settings.sync_database_url) == {
        "usr_a1": "owner",  # the oldest tenant:admin of ten_a
        "usr_a2": "admin",
        "usr_a3": None,
        "usr_b1": None,
        "usr_b2": "owner",  # the only tenant:admin of ten_b, though not its oldest user
    }
