"""``create_app(settings)``: the composition root. Builds services, registry and MCP server once."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

import anyio
from fastapi import FastAPI
from starlette.routing import Route

from agent_server.clock import Clock
from agent_server.mcp import build_mcp_server
from agent_server.services import Services, build_services, close_services
from agent_server.settings import Settings
from agent_server.storage.migrate import upgrade
from http_facade.errors import install_error_handlers
from http_facade.middleware import BodyLimit, CommonHeaders
from http_facade.routes import mcp as mcp_routes
from http_facade.routes import tools as tool_routes
from tools import build_registry
from wellknown.mcp import MCP_PATH, mcp_manifest

API_VERSION = "2026-05-18"
log = logging.getLogger("agentgate")


def create_app(settings: Settings | None = None, *, clock: Clock | None = None) -> FastAPI:
    settings = settings or Settings()
    services = build_services(settings, clock)
    registry = build_registry(settings)
    mcp_server = build_mcp_server(registry, services)
    managers = mcp_routes.session_managers(mcp_server, settings)
    company = services.knowledge.pack.company

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await anyio.to_thread.run_sync(upgrade, settings)
        async with AsyncExitStack() as stack:
            for manager in managers.values():
                await stack.enter_async_context(manager.run())
            stack.push_async_callback(close_services, services)
            app.state.ready = True
            yield

    app = FastAPI(
        title=f"{company.name} gateway and public API",
        version=API_VERSION,
        summary=company.tagline,
        lifespan=lifespan,
        docs_url="/docs",
        redoc_url=None,
    )
    app.state.services = services
    app.state.registry = registry
    app.state.ready = False
    install_error_handlers(app, settings.public_base_url.rstrip("/"))

    endpoint = mcp_routes.MCPEndpoint(
        managers, lambda: mcp_manifest(registry, settings, company.name, company.tagline)
    )
    app.router.routes.append(Route(MCP_PATH, endpoint=endpoint, methods=["GET", "HEAD", "POST", "DELETE"]))
    app.include_router(tool_routes.router)

    app.add_middleware(CommonHeaders, headers={"API-Version": API_VERSION})
    app.add_middleware(
        BodyLimit, limit=settings.max_request_bytes, base_url=settings.public_base_url.rstrip("/")
    )
    return app


def services_of(app: FastAPI) -> Services:
    return app.state.services
