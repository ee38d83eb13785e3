"""Operator actions behind ``agentgate tenants|users|keys create``: run without a server.

Each opens the database of the settings (migrating it and seeding plans first, so a fresh
installation works), does one thing and closes it. Keys made here are ``sk_test_`` in sandbox mode
and ``sk_live_`` in production mode, like keys made through the admin API.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from agent_server.accounts.password_policy import PasswordPolicy
from agent_server.clock import SystemClock
from agent_server.content import load_pack
from agent_server.errors import NotFound
from agent_server.gateway import repository as repo
from agent_server.gateway.plans import PlanCatalog, check_scopes, seed_plans
from agent_server.gateway.tables import ApiKey, Tenant, User
from agent_server.services import shipped_content_dir
from agent_server.settings import Settings
from agent_server.storage.db import Database
from agent_server.storage.migrate import upgrade

_clock = SystemClock()


@asynccontextmanager
async def _database(settings: Settings) -> AsyncIterator[tuple[Database, PlanCatalog]]:
    import anyio.to_thread

    await anyio.to_thread.run_sync(upgrade, settings)
    pack = load_pack(shipped_content_dir(), settings.content_dir)
    db = Database(settings)
    try:
        await seed_plans(db, pack.plans, _clock.now())
        catalog = PlanCatalog()
        await catalog.load(db)
        yield db, catalog
    finally:
        await db.dispose()


async def _tenant(db: Database, id_or_name: str) -> Tenant:
    tenant = await repo.find_tenant(db, id_or_name)
    if tenant is None:
        raise NotFound(f"No tenant with the id or name '{id_or_name}'.", param="tenant")
    return tenant


async def create_tenant(settings: Settings, name: str, plan: str, rate_limit: int | None = None) -> Tenant:
    async with _database(settings) as (db, _):
        return await repo.create_tenant(db, _clock.now(), name, plan, rate_limit)


async def create_user(
    settings: Settings, tenant: str, email: str, password: str, *, admin: bool = False
) -> User:
    async with _database(settings) as (db, _):
        owner = await _tenant(db, tenant)
        policy = PasswordPolicy(settings)  # the rule of every path that sets a password
        password_hash = await policy.hash_new(password, user_inputs=[email, owner.name])
        permissions = ["tenant:admin"] if admin else []
        return await repo.add_user(
            db, repo.new_user(_clock.now(), owner.id, email, password_hash, permissions)
        )


async def create_key(settings: Settings, tenant: str, name: str, scopes: list[str]) -> tuple[ApiKey, str]:
    async with _database(settings) as (db, catalog):
        owner = await _tenant(db, tenant)
        wanted = check_scopes(catalog.get(owner.plan_id), scopes)
        environment = "test" if settings.sandbox else "live"
        record, full = repo.new_key(_clock.now(), owner.id, name, wanted, environment)
        await repo.add_key(db, record)
        return record, full
