"""The routing table in the database: seeded from settings, reloaded when its revision changes."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import pytest
from sqlalchemy import func, select

from agent_server.capabilities.services import build_services, close_services
from agent_server.foundation.clock import ManualClock
from agent_server.foundation.settings import Settings
from agent_server.foundation.settings_llm import RouteEntry
from agent_server.llm.router import Router, build_router
from agent_server.llm.store import read_table, write_table
from agent_server.llm.tables import LLMRoutingState
from agent_server.llm.types import ChatRequest
from agent_server.storage.db import Database
from agent_server.storage.migrate import upgrade
from tests.llm.conftest import UPSTREAM_KEY, config
from tests.llm.fake_upstream import FakeUpstream

CATALOGUE = [("agentgate-mock-small", "agentgate"), ("gpt-4o", "OpenAI")]


@pytest.fixture
async def db(settings: Settings) -> AsyncIterator[Database]:
    await anyio.to_thread.run_sync(upgrade, settings)
    database = Database(settings)
    yield database
    await database.dispose()


def production(settings: Settings, base_url: str, **models: str) -> Settings:
    up = config(base_url, "up", models=models or {"gpt-test": "upstream-model-1"})
    return settings.model_copy(update={"mode": "production", "upstreams": [up]})


async def make_router(settings: Settings, db: Database, clock: ManualClock) -> Router:
    return build_router(settings, db, clock, lambda: CATALOGUE)


async def test_seeded_from_settings_and_reloaded_on_a_new_revision(
    settings: Settings, db: Database, upstream: FakeUpstream
) -> None:
    clock = ManualClock()
    router = await make_router(production(settings, upstream.base_url), db, clock)
    try:
        assert await router.models() == ["agentgate-mock-small", "gpt-test"]
        stored = await read_table(db)
        assert stored is not None and stored.revision == 1
        assert stored.as_entries()["gpt-test"] == [RouteEntry(backend="up")]
        # another process (later: PATCH /admin/llm-routing/) writes a new table
        revision = await write_table(db, {"gpt-new": [RouteEntry(backend="up")]})
        assert revision == 2
        assert "gpt-new" not in await router.models()  # re-checked at most once per second
        clock.advance(1.0)
        assert await router.models() == ["gpt-new"]
        completion = await router.complete(
            ChatRequest(model="gpt-new", messages=[{"role": "user", "content": "x"}])
        )
        assert completion.content and upstream.requests[-1]["model"] == "gpt-new"  # unmapped ids pass as is
    finally:
        await router.aclose()


async def test_a_second_process_reuses_the_table_and_admin_edits_survive_restarts(
    settings: Settings, db: Database, upstream: FakeUpstream
) -> None:
    prod = production(settings, upstream.base_url)
    first = await make_router(prod, db, ManualClock())
    second = await make_router(prod, db, ManualClock())
    assert await first.models() == await second.models()
    async with db.session() as session:
        assert (await session.execute(select(func.max(LLMRoutingState.revision)))).scalar() == 1
    # settings changed while the table still comes from settings: a restart applies them
    changed = production(settings, upstream.base_url, **{"gpt-other": "x"})
    assert "gpt-other" in await (await make_router(changed, db, ManualClock())).models()
    # an admin edit is never overwritten by settings
    await write_table(db, {"gpt-admin": [RouteEntry(backend="up")]}, source="admin")
    assert await (await make_router(changed, db, ManualClock())).models() == ["gpt-admin"]
    for router in (first, second):
        await router.aclose()


async def test_without_a_database_the_settings_table_is_served(settings: Settings) -> None:
    # No migration ran: the table cannot be read, yet the mock models stay routable.
    database = Database(settings)
    router = build_router(settings, database, ManualClock(), lambda: CATALOGUE)
    try:
        completion = await router.complete(
            ChatRequest(model="gpt-4o", messages=[{"role": "user", "content": "hello"}])
        )
        assert completion.content.startswith(("Sure.", "Here", "Understood.", "Good"))
    finally:
        await router.aclose()
        await database.dispose()


async def test_services_llm_is_the_router_and_the_sandbox_catalogue_routes_to_the_mock(
    settings: Settings, db: Database
) -> None:
    services = build_services(settings)
    try:
        assert isinstance(services.llm, Router)
        models = await services.llm.models()
        assert {"agentgate-mock-small", "agentgate-mock-large", "gpt-4o"} <= set(models)
        request = ChatRequest(model="agentgate-mock-small", messages=[{"role": "user", "content": "Why?"}])
        assert "agentgate-mock-small" in (await services.llm.complete(request)).content
    finally:
        await close_services(services)


def test_settings_read_upstreams_from_json_and_hide_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        "AGENTGATE_UPSTREAMS",
        f'[{{"name": "openai", "base_url": "https://api.example/v1/", "api_key": "{UPSTREAM_KEY}",'
        ' "models": {"gpt-4o": "gpt-4o-2024-08-06"}}]',
    )
    monkeypatch.setenv("AGENTGATE_ROUTES", '{"gpt-4o": [{"backend": "openai", "weight": 2}]}')
    loaded = Settings()
    assert loaded.upstreams[0].base_url == "https://api.example/v1"
    assert loaded.upstreams[0].api_key.get_secret_value() == UPSTREAM_KEY
    assert loaded.routes == {"gpt-4o": [RouteEntry(backend="openai", weight=2)]}
    assert UPSTREAM_KEY not in repr(loaded) and UPSTREAM_KEY not in str(loaded.model_dump())
