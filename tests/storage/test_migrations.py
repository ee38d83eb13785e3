"""``agentgate migrate`` builds the schema the models declare, on SQLite and on PostgreSQL, idempotently.

The comparison is general: every table of ``SQLModel.metadata`` (with every table module imported,
as Alembic's env does) must exist with exactly its columns, and the migrations may create no table
that no model declares. A model changed without a migration, or the reverse, fails here.
Feature branches of the schema may each start from the foundation: ``migrate`` applies every head.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, inspect, text
from sqlmodel import SQLModel

from agent_server.foundation.settings import Settings
from agent_server.storage import migrate as migrate_module
from agent_server.storage import tables  # noqa: F401  (registers every table on the metadata)
from agent_server.storage.migrate import alembic_config
from http_facade.cli import main
from tests.support.migrated import REAL_UPGRADE

ALEMBIC_TABLE = "alembic_version"


@pytest.fixture(autouse=True)
def from_empty(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every migration runs here: no database starts from the tests' migrated template."""
    monkeypatch.setattr(migrate_module, "upgrade", REAL_UPGRADE)


def migrate(monkeypatch: pytest.MonkeyPatch, data_dir: Path, database_url: str | None) -> Settings:
    """Run ``agentgate migrate`` as a user would, configured through the environment only."""
    monkeypatch.setenv("AGENTGATE_DATA_DIR", str(data_dir))
    if database_url is None:
        monkeypatch.delenv("AGENTGATE_DATABASE_URL", raising=False)
    else:
        monkeypatch.setenv("AGENTGATE_DATABASE_URL", database_url)
    assert main(["migrate"]) == 0
    return Settings()


def schema_of(url: str) -> tuple[dict[str, set[str]], list[str]]:
    """Tables with their column names, and the recorded Alembic revision(s)."""
    engine = create_engine(url)
    try:
        inspector = inspect(engine)
        found = {
            name: {column["name"] for column in inspector.get_columns(name)}
            for name in inspector.get_table_names()
        }
        with engine.connect() as conn:
            versions = [row[0] for row in conn.execute(text(f"SELECT version_num FROM {ALEMBIC_TABLE}"))]
    finally:
        engine.dispose()
    return found, versions


def script(settings: Settings) -> ScriptDirectory:
    return ScriptDirectory.from_config(alembic_config(settings))


def declared() -> dict[str, set[str]]:
    return {name: {c.name for c in table.columns} for name, table in SQLModel.metadata.tables.items()}


def assert_matches_models(found: dict[str, set[str]]) -> None:
    expected = declared()
    assert expected, "no tables registered on SQLModel.metadata"
    actual = {name: columns for name, columns in found.items() if name != ALEMBIC_TABLE}
    missing = sorted(set(expected) - set(actual))
    assert not missing, f"tables declared by models but not created by the migrations: {missing}"
    extra = sorted(set(actual) - set(expected))
    assert not extra, f"tables created by the migrations but declared by no model: {extra}"
    problems = {
        name: {
            "missing columns": sorted(expected[name] - actual[name]),
            "extra columns": sorted(actual[name] - expected[name]),
        }
        for name in expected
        if expected[name] != actual[name]
    }
    assert not problems, f"columns differ between models and migrations: {problems}"


def check_upgrade(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, database_url: str | None) -> None:
    settings = migrate(monkeypatch, tmp_path, database_url)
    url = settings.sync_database_url
    found, versions = schema_of(url)
    assert sorted(versions) == sorted(script(settings).get_heads())  # every branch applied
    assert_matches_models(found)

    # a second run is a no-op: same revision, same schema, no error
    migrate(monkeypatch, tmp_path, database_url)
    assert schema_of(url) == (found, versions)


def test_migrate_on_sqlite_creates_every_model_table(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    check_upgrade(monkeypatch, tmp_path, None)
    assert (tmp_path / "agentgate.db").is_file()


@pytest.mark.postgres
def test_migrate_on_postgresql_creates_every_model_table(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, empty_postgres_url: str
) -> None:
    check_upgrade(monkeypatch, tmp_path, empty_postgres_url)


def test_every_migration_descends_from_the_foundation() -> None:
    """One base, so a fresh database always starts from 0001_foundation whatever branches exist."""
    scripts = script(Settings())
    assert scripts.get_bases() == ["0001_foundation"]
    for revision in scripts.walk_revisions():
        assert revision.revision == revision.module.revision
        if revision.revision != "0001_foundation":
            ancestors = {r.revision for r in scripts.iterate_revisions(revision.revision, "base")}
            assert "0001_foundation" in ancestors, revision.revision


def test_a_start_at_head_runs_no_migration_and_one_behind_upgrades(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The usual start finds the schema at head and leaves alembic's scripts unread; a database one
    revision behind still gets the missing migration."""
    settings = migrate(monkeypatch, tmp_path, None)
    ran: list[str] = []
    real_upgrade = migrate_module.command.upgrade

    def counted(config: object, revision: str) -> None:
        ran.append(revision)
        real_upgrade(config, revision)

    monkeypatch.setattr(migrate_module.command, "upgrade", counted)
    REAL_UPGRADE(settings)
    assert ran == []
    heads = sorted(script(settings).get_heads())
    previous = script(settings).get_revision(heads[0]).down_revision
    engine = create_engine(settings.sync_database_url)
    try:
        with engine.begin() as connection:  # one step back, on a connection as env.py expects it
            config = alembic_config(settings)
            config.attributes["connection"] = connection
            migrate_module.command.downgrade(config, previous)
    finally:
        engine.dispose()
    REAL_UPGRADE(settings)
    assert ran == ["heads"]
    assert sorted(schema_of(settings.sync_database_url)[1]) == heads
