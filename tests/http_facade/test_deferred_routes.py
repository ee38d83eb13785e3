"""The administration API, the Agentic Commerce Protocol, the billing routes and the pages are built at
their first request (http_facade/deferred_routes.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from fastapi.routing import iter_route_contexts

from agent_server.foundation.settings import Settings
from http_facade.app import create_app
from http_facade.deferred_routes import DeferredRoutes
from http_facade.exact_routes import ExactRoutesApp
from tests.conftest import BASE_URL, running


def _settings(directory: Path, **changes: object) -> Settings:
    return Settings(
        data_dir=directory, public_base_url=BASE_URL, redis_url=None, database_url=None, **changes
    )


GROUPS = ["administration", "agentic commerce", "billing", "pages"]  # in the order of create_app


def _groups(app: ExactRoutesApp) -> list[DeferredRoutes]:
    return [route for route in app.router.routes if isinstance(route, DeferredRoutes)]


def test_each_group_adds_only_paths_under_its_prefixes(tmp_path: Path) -> None:
    app = create_app(_settings(tmp_path))
    groups = _groups(app)
    assert [group.name for group in groups] == GROUPS
    for group in groups:
        paths = [context.path_format or context.path for context in iter_route_contexts(group.build())]
        assert len(paths) > 6, (group.name, paths)
        stray = [path for path in paths if not str(path).startswith(group.prefixes)]
        assert not stray, (group.name, stray)
    assert not _groups(app)  # built in place: the router now holds the routes themselves


def test_app_routes_lists_every_route_and_keeps_the_order_of_create_app(tmp_path: Path) -> None:
    app = create_app(_settings(tmp_path))
    paths = [context.path_format for context in iter_route_contexts(app.routes)]
    assert not _groups(app)
    # the gateway first, the administration after the tools, the pages last
    assert paths.index("/v1/models") < paths.index("/api/tools/call") < paths.index("/admin/api-keys")
    assert paths.index("/admin/api-keys") < paths.index("/register") < paths.index("/api/ask.php")
    assert paths.index("/api/status.php") < paths.index("/agentic_commerce/checkout_sessions")
    assert paths.index("/agentic_commerce/orders/{order_id}") < paths.index("/.well-known/acp.json")
    assert paths.index("/oauth/token") < paths.index("/billing_provider/webhooks")
    assert paths.index("/billing_provider/sandbox/portal/{ref}") < paths.index("/pricing")
    assert paths[-1] == "/static/{path}"


async def test_the_first_request_builds_its_group_only(tmp_path: Path) -> None:
    async with running(create_app(_settings(tmp_path))) as app:
        transport = httpx.ASGITransport(app)
        async with httpx.AsyncClient(transport=transport, base_url=BASE_URL) as client:
            assert (await client.get("/v1/models")).status_code == 401
            assert [group.built for group in _groups(app)] == [False] * len(GROUPS)
            unauthorised = await client.get("/admin/api-keys")
            assert [group.name for group in _groups(app)] == GROUPS[1:]
            # the route answers (its envelope), a wrong method is the router's 405, an unknown path 404
            assert unauthorised.status_code == 401
            assert unauthorised.json()["error"]["type"] == "authentication_error"
            assert (await client.put("/admin/api-keys")).status_code == 405
            assert (await client.get("/admin/no-such-thing")).status_code == 404
            assert [group.name for group in _groups(app)] == GROUPS[1:]  # a 405's Allow looked only here
            status = await client.get("/billing_provider/status")  # the gateway's envelope: 401
            assert status.status_code == 401 and status.json()["error"]["type"] == "authentication_error"
            assert (await client.get("/billing_provider/webhooks")).status_code == 405
            assert [group.name for group in _groups(app)] == ["agentic commerce", "pages"]
            checkout = await client.get("/agentic_commerce/checkout_sessions/cs_none")
            assert checkout.status_code == 401 and checkout.json()["type"] == "invalid_request"  # ACP's
            assert [group.name for group in _groups(app)] == ["pages"]
            page = await client.get("/pricing", headers={"Accept": "text/html"})
            assert page.status_code == 200 and "/static/" in page.text  # url_for of the same group
            assert not _groups(app)


async def test_a_page_that_links_static_files_builds_the_pages_first(tmp_path: Path) -> None:
    """The home page is a route of the site (JSON or HTML), its template links /static of the pages."""
    async with running(create_app(_settings(tmp_path))) as app:
        transport = httpx.ASGITransport(app)
        async with httpx.AsyncClient(transport=transport, base_url=BASE_URL) as client:
            home = await client.get("/", headers={"Accept": "text/html"})
            assert home.status_code == 200 and 'href="/static/' in home.text
            style = await client.get("/static/" + home.text.split('href="/static/', 1)[1].split('"', 1)[0])
            assert style.status_code == 200


def test_renamed_connector_segments_are_checked_at_start(tmp_path: Path) -> None:
    app = create_app(_settings(tmp_path / "a", office_suite_path_segment="suite"))
    assert [group.name for group in _groups(app)] == GROUPS[1:]  # the administration built at start
    with pytest.raises(ValueError, match="webhooks"):
        create_app(_settings(tmp_path / "b", office_suite_path_segment="webhooks"))


PROBE = """
import json, sys
from agent_server.foundation.settings import Settings
from http_facade.app import create_app

create_app(Settings(data_dir=sys.argv[1], redis_url=None, database_url=None))
print(json.dumps(sorted(name for name in json.loads(sys.argv[2]) if name in sys.modules)))
"""


def test_a_worker_starts_without_the_deferred_modules(tmp_path: Path) -> None:
    modules = [
        "http_facade.routes.admin_webhooks",
        "http_facade.routes.admin_members",
        "http_facade.routes.admin_sso",
        "http_facade.routes.sso_saml",
        "http_facade.routes.account_passkeys",
        "http_facade.pages.dashboard",
        "http_facade.pages.routers",
        "http_facade.routes.acp_checkout",
        "http_facade.routes.billing_checkout",
        "http_facade.routes.billing_sandbox",
    ]
    probe = [sys.executable, "-c", PROBE, str(tmp_path), json.dumps(modules)]
    done = subprocess.run(probe, capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


async def test_a_group_that_fails_to_build_answers_500_and_builds_at_the_next_request(tmp_path: Path) -> None:
    application = create_app(_settings(tmp_path))
    calls: list[int] = []

    def install(app: ExactRoutesApp) -> None:
        calls.append(1)
        app.add_api_route("/flaky/thing", lambda: {"ok": True})
        if len(calls) == 1:
            raise RuntimeError("an import failed")

    application.router.routes.insert(0, DeferredRoutes(application, "flaky", ("/flaky/",), install))
    async with running(application) as app:
        transport = httpx.ASGITransport(app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url=BASE_URL) as client:
            failed = await client.get("/flaky/thing")
            assert failed.status_code == 500 and failed.json()["error"]["type"]
            answer = await client.get("/flaky/thing")
            assert answer.status_code == 200 and answer.json() == {"ok": True} and len(calls) >= 2
    # the failed attempt left nothing behind: one route, where the placeholder stood
    flaky = [i for i, r in enumerate(app.router.routes) if getattr(r, "path", "") == "/flaky/thing"]
    assert flaky == [0]
