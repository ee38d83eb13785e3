"""The database an operator command works on: the server's, never a new empty one.

``agentgate migrate`` and a server start create and migrate the database. An administration command
(``agentgate tenants|users|keys ...``) only opens it, after checking that it exists and carries the
schema this version expects: a wrong data dir or URL is one clear error naming where it looked,
not a silently created empty database elsewhere. What a command changes is recorded in the audit
log (actor ``cli``) and its events reach the tenant's webhooks, as through the admin API.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import inspect, make_url, text
from sqlalchemy.exc import DBAPIError

from agent_server.admin.audit import AuditLog
from agent_server.foundation.clock import SystemClock
from agent_server.foundation.errors import Conflict, NotFound, Unavailable
from agent_server.foundation.events import EventBus
from agent_server.foundation.secret_box import SecretBox
from agent_server.foundation.settings import Settings
from agent_server.gateway.plans import PlanCatalog, seed_plans
from agent_server.knowledge.pack import load_pack, shipped_content_dir
from agent_server.storage.db import Database
from agent_server.webhooks.dispatcher import subscribe
from agent_server.webhooks.repository import WebhookRepository
from agent_server.webhooks.url_guard import UrlGuard

CLI_ACTOR = "cli"
MIGRATE_HINT = "Run `agentgate migrate` (or start the server once) to create it"


@dataclass
class Operator:
    """What one operator command needs: the database, the plans, the audit log and the event bus."""

    db: Database
    catalog: PlanCatalog
    audit: AuditLog
    events: EventBus
    clock: SystemClock

    async def record(self, tenant_id: str | None, action: str, target: str, **details: Any) -> None:
        await self.audit.record(
            actor=CLI_ACTOR,
            tenant_id=tenant_id,
            action=action,
            target=target,
            details={"via": "cli", **details},
        )


def database_location(settings: Settings) -> str:
    """Where the settings point, for messages: the SQLite file and why, or the URL without its password."""
    if settings.database_url:
        url = make_url(settings.sync_database_url).render_as_string(hide_password=True)
        return f"{url} (AGENTGATE_DATABASE_URL)"
    source = "AGENTGATE_DATA_DIR" if "data_dir" in settings.model_fields_set else "the default data dir"
    return f"{_sqlite_file(settings)} ({source})"


def _sqlite_file(settings: Settings) -> Path:
    return Path(settings.sync_database_url.split(":///", 1)[1]).resolve()


def schema_heads(settings: Settings) -> set[str]:
    """The revisions a database migrated by this version carries (the migrations have several heads)."""
    from alembic.script import ScriptDirectory  # only operator commands load alembic

    from agent_server.storage.migrate import alembic_config

    return set(ScriptDirectory.from_config(alembic_config(settings)).get_heads())


async def _check_schema(db: Database, settings: Settings) -> None:
    where = database_location(settings)
    try:
        async with db.engine.connect() as conn:
            migrated = await conn.run_sync(lambda sync: inspect(sync).has_table("alembic_version"))
            query = text("SELECT version_num FROM alembic_version")
            revisions = set((await conn.execute(query)).scalars()) if migrated else set()
    except DBAPIError as exc:
        raise Unavailable(f"Cannot reach the database at {where}: {type(exc.orig).__name__}.") from None
    if not revisions:
        raise NotFound(
            f"The database at {where} has no agentgate schema. {MIGRATE_HINT}.", code="database_not_found"
        )
    expected = schema_heads(settings)
    if revisions != expected:
        raise Conflict(
            f"The database at {where} is at schema revisions {', '.join(sorted(revisions))}; this agentgate "
            f"expects {', '.join(sorted(expected))}. Run `agentgate migrate` with this version first.",
            code="schema_mismatch",
        )


@asynccontextmanager
async def operator_database(settings: Settings) -> AsyncIterator[Operator]:
    """Open the server's database for one command; the plans of the content pack are brought up to date."""
    if not settings.database_url and not _sqlite_file(settings).is_file():
        raise NotFound(
            f"No agentgate database at {database_location(settings)}. {MIGRATE_HINT}, or set "
            "AGENTGATE_DATA_DIR (or AGENTGATE_DATABASE_URL) to the server's.",
            code="database_not_found",
        )
    clock = SystemClock()
    db = Database(settings)
    try:
        await _check_schema(db, settings)
        await seed_plans(db, load_pack(shipped_content_dir(), settings.content_dir).plans, clock.now())
        catalog = PlanCatalog()
        await catalog.load(db)
        events = EventBus()
        webhooks = WebhookRepository(
            db,
            SecretBox.from_settings(settings),
            clock,
            UrlGuard.for_mode(settings.sandbox),
            settings.webhook_max_per_tenant,
        )
        subscribe(events, webhooks, wake=lambda: None)  # the servers' delivery workers send them
        audit = AuditLog(
            db,
            clock,
            events,
            failed_login_limit=settings.audit_failed_login_limit,
            failed_login_window=settings.audit_failed_login_window_seconds,
        )
        yield Operator(db, catalog, audit, events, clock)
    finally:
        await db.dispose()
