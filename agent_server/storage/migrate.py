"""Schema migrations with Alembic, applied at start and by ``agentgate migrate``."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, create_engine

from agent_server.foundation.settings import Settings
from agent_server.storage.db import POSTGRES_CONNECT_ARGS, install_sqlite_pragmas, prepare_sqlite_dir

MIGRATIONS = Path(__file__).parent / "migrations"


def alembic_config(settings: Settings) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", settings.sync_database_url.replace("%", "%%"))
    return config


def upgrade(settings: Settings, revision: str = "heads") -> None:
    """Bring the schema to ``revision``; safe to run on every start and from several processes."""
    url = settings.sync_database_url
    prepare_sqlite_dir(url)
    engine = create_engine(url, connect_args=POSTGRES_CONNECT_ARGS if url.startswith("postgresql") else {})
    install_sqlite_pragmas(engine)
    config = alembic_config(settings)
    try:
        with engine.connect() as connection:
            sqlite = connection.dialect.name == "sqlite"
            if sqlite:
                # SQLite changes a table by copying it and dropping the old one, which the foreign
                # keys of other tables' rows would refuse; they are checked once at the end instead.
                # The pragma only takes effect outside a transaction, so it comes first.
                connection.exec_driver_sql("PRAGMA foreign_keys=OFF")
                connection.commit()
            with connection.begin():
                if not sqlite:
                    # Serialise concurrent starts of several processes on one database.
                    connection.exec_driver_sql("SELECT pg_advisory_xact_lock(727272)")
                if revision == "heads" and _at_heads(connection):
                    return  # the usual start: nothing to do, and no migration script loaded
                config.attributes["connection"] = connection
                command.upgrade(config, revision)
                if sqlite and (broken := connection.exec_driver_sql("PRAGMA foreign_key_check").all()):
                    raise RuntimeError(
                        f"the migrated schema breaks {len(broken)} foreign key(s): {broken[:3]}"
                    )
    finally:
        engine.dispose()


def _at_heads(connection: Connection) -> bool:
    from alembic.runtime.migration import MigrationContext

    return set(MigrationContext.configure(connection).get_current_heads()) == _script_heads()


@cache  # the scripts are Python files alembic executes: read them once per process
def _script_heads() -> frozenset[str]:
    from alembic.script import ScriptDirectory

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return frozenset(ScriptDirectory.from_config(config).get_heads())


def current_head(settings: Settings) -> str | None:
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config(settings)).get_current_head()
