"""Migration 0021_oauth makes exactly the agent sign-in tables of the models, and goes back down."""

from __future__ import annotations

from typing import Any

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine, inspect
from sqlmodel import SQLModel

from agent_server.foundation.settings import Settings
from agent_server.storage import tables  # noqa: F401  (registers every table)
from agent_server.storage.migrate import alembic_config, upgrade

OURS = {
    "anonymous_identities",
    "agent_assertions",
    "oauth_clients",
    "oauth_codes",
    "oauth_tokens",
    "oauth_consents",
}


def _table(diff: Any) -> str | None:
    item = diff[0] if isinstance(diff, list) else diff
    for part in item[1:] if isinstance(item, tuple) else ():
        table = getattr(part, "table", None)
        if table is not None:
            return table.name
        name = part if isinstance(part, str) else getattr(part, "name", None)
        if name in OURS:
            return name
    return None


def test_the_migration_matches_the_tables_and_goes_down(settings: Settings) -> None:
    upgrade(settings)
    engine = create_engine(settings.sync_database_url)
    try:
        with engine.connect() as connection:
            context = MigrationContext.configure(connection, opts={"compare_type": True})
            drift = [d for d in compare_metadata(context, SQLModel.metadata) if _table(d) in OURS]
            assert drift == []
            assert set(inspect(connection).get_table_names()) >= OURS
        with engine.begin() as connection:
            config = alembic_config(settings)
            config.attributes["connection"] = connection
            command.downgrade(config, "0021_oauth-1")
        with engine.connect() as connection:
            assert not OURS & set(inspect(connection).get_table_names())
    finally:
        engine.dispose()
