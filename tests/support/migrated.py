"""Migrated schema templates: a test's new database starts as a copy of one migrated once.

Replaying every migration costs ~0.5 s per fresh SQLite file, and most tests start an app on a new
data directory. The first SQLite database a test's app creates is copied from a template the real
migrations built once per test process. The copy is at head, so the app's own ``upgrade`` returns
at once (running alembic to find nothing to do cost ~4 % of the CPU of the tests that start apps);
a database that already exists is upgraded as always. PostgreSQL databases of the ``postgres_url``
fixture are created from a migrated template database (``CREATE DATABASE ... TEMPLATE``). The
migrations themselves are tested from an empty database (tests/storage/test_migrations.py restores
``REAL_UPGRADE``).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from agent_server.foundation.settings import Settings
from agent_server.storage import migrate

SQLITE_PREFIX = "sqlite:///"
REAL_UPGRADE: Callable[..., None] = migrate.upgrade  # for the tests of the migrations themselves


def _sqlite_file(settings: Settings) -> Path | None:
    url = settings.sync_database_url
    if not url.startswith(SQLITE_PREFIX) or ":memory:" in url:
        return None
    return Path(url[len(SQLITE_PREFIX) :])


@contextmanager
def sqlite_template(directory: Path) -> Iterator[None]:
    """While open, ``migrate.upgrade`` starts a SQLite database that does not exist yet from the template."""
    real_upgrade = REAL_UPGRADE
    template = directory / "agentgate.db"
    real_upgrade(Settings(data_dir=directory, redis_url=None, database_url=None))

    def upgrade(settings: Settings, revision: str = "heads") -> None:
        target = _sqlite_file(settings)
        if revision == "heads" and target is not None and not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(template, target)
            return  # the template is at head: the upgrade would find nothing to do
        real_upgrade(settings, revision)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(migrate, "upgrade", upgrade)
        yield


def migrate_postgres(url: str) -> None:
    """Migrate the PostgreSQL database at ``url`` to head (the template's one-time build)."""
    migrate.upgrade(Settings(data_dir=Path(tempfile.gettempdir()), redis_url=None, database_url=url))
