"""Apps of one process share the routes of the module-level routers (http_facade/shared_routes.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
from fastapi import APIRouter, FastAPI
from fastapi.routing import APIRoute

from agent_server.foundation.settings import Settings
from http_facade.app import create_app
from http_facade.exact_routes import ExactRoutesApp
from tests.conftest import BASE_URL, running


def _route(app: FastAPI, path: str, method: str) -> APIRoute:
    return next(r for r in app.routes if isinstance(r, APIRoute) and r.path == path and method in r.methods)


def _settings(directory: Path, **changes: object) -> Settings:
    return Settings(
        data_dir=directory, public_base_url=BASE_URL, redis_url=None, database_url=None, **changes
    )


def test_two_apps_hold_the_same_route_objects(tmp_path: Path) -> None:
    first, second = create_app(_settings(tmp_path / "a")), create_app(_settings(tmp_path / "b"))
    for path, method in (("/v1/models", "GET"), ("/admin/api-keys", "POST"), ("/health/live", "GET")):
        assert _route(first, path, method) is _route(second, path, method)
    # All but the few an app makes for itself (/openapi.json, the MCP endpoint, the chat route, the
    # chat widget's), the billing routers' inclusions under their segment included.
    shared = {id(route) for route in second.routes}
    own = [route for route in first.routes if id(route) not in shared]
    assert len(first.routes) > 100 and len(own) <= 8, own


async def test_a_shared_route_answers_in_each_app(tmp_path: Path) -> None:
    for name in ("a", "b"):
        async with running(create_app(_settings(tmp_path / name))) as app:
            transport = httpx.ASGITransport(app)
            async with httpx.AsyncClient(transport=transport, base_url=BASE_URL) as client:
                answer = await client.get("/v1/models")
            assert answer.status_code == 401 and answer.json()["error"]["type"] == "authentication_error"


async def test_a_prefixed_include_is_built_once_and_answers_under_its_prefix() -> None:
    router = APIRouter()

    @router.get("/ping")
    async def ping() -> dict[str, str]:
        return {"pong": "yes"}

    apps = [ExactRoutesApp(), ExactRoutesApp()]
    for app in apps:
        app.include_router(router, prefix="/under")
    assert apps[0].routes[-1] is apps[1].routes[-1]  # one inclusion object for both apps
    for app in apps:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url=BASE_URL) as client:
            assert (await client.get("/under/ping")).json() == {"pong": "yes"}
            assert (await client.get("/ping")).status_code == 404


async def test_an_include_with_other_options_is_fastapis_own() -> None:
    router = APIRouter()

    @router.get("/tagged")
    async def tagged() -> dict[str, bool]:
        return {"ok": True}

    app = ExactRoutesApp()
    app.include_router(router, tags=["extra"])
    assert router.routes[0] not in app.routes  # FastAPI built the app's copy, with the tag
    assert app.openapi()["paths"]["/tagged"]["get"]["tags"] == ["extra"]


async def test_the_routers_lifespan_runs_inside_the_apps_and_the_apps_state_wins() -> None:
    events: list[str] = []

    @asynccontextmanager
    async def app_lifespan(_: FastAPI) -> AsyncIterator[dict[str, str]]:
        events.append("app start")
        yield {"who": "app", "app_only": "1"}
        events.append("app stop")

    @asynccontextmanager
    async def router_lifespan(_: FastAPI) -> AsyncIterator[dict[str, str]]:
        events.append("router start")
        yield {"who": "router", "router_only": "1"}
        events.append("router stop")

    app = ExactRoutesApp(lifespan=app_lifespan)
    app.include_router(APIRouter(lifespan=router_lifespan))
    async with app.router.lifespan_context(app) as state:
        assert state == {"who": "app", "app_only": "1", "router_only": "1"}
    assert events == ["app start", "router start", "router stop", "app stop"]
