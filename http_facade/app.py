"""``create_app(settings)``: the composition root. Builds services, registry and MCP server once."""

from __future__ import annotations

import gc
import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

import anyio
from fastapi import FastAPI

from agent_server.accounts.service import Accounts
from agent_server.admin.wiring import admin_running
from agent_server.agent_auth.asserted import asserted_keys_of
from agent_server.batches.wiring import build_batches
from agent_server.billing.wiring import build_billing
from agent_server.capabilities.services import Services, build_services, close_services
from agent_server.commerce.wiring import build_commerce
from agent_server.deployment.checks import check_deployment
from agent_server.files.service import files_for
from agent_server.foundation.clock import Clock
from agent_server.foundation.settings import Settings
from agent_server.gateway.response_cache import ResponseCache
from agent_server.gateway.service import Gateway
from agent_server.mcp.events import build_events
from agent_server.mcp.watch import ContentWatch
from agent_server.oauth.service import oauth_of
from agent_server.observability.metrics import Metrics
from agent_server.policies.versions import VersionRegistry, default_versions
from agent_server.reminders.job import VersionReminders
from agent_server.site.build import build_site
from agent_server.site.leads import DiscoveryCalls
from http_facade.audit_trail import AuditMiddleware
from http_facade.errors import install_error_handlers
from http_facade.exact_routes import ExactRoutesApp
from http_facade.middleware import Edge
from http_facade.route_groups import (
    ADMINISTRATION_PREFIXES,
    PAGE_PREFIXES,
    install_administration,
    install_pages,
    renames_connectors,
)
from http_facade.routes import (
    agent_auth,
    gateway_batches,
    gateway_cached,
    gateway_completions,
    gateway_embeddings,
    gateway_files,
    gateway_messages,
    gateway_responses,
    gateway_v1,
    gateway_v2,
    probes,
    register,
    wellknown,
)
from http_facade.routes import oauth as oauth_routes
from http_facade.routes import tools as tool_routes
from http_facade.routes.billing_routers import install_billing
from http_facade.routes.internal_rpc import install_internal_rpc
from http_facade.routes.mcp_on_demand import Built, MCPOnDemand, MCPRoute
from http_facade.routes.site_chat import chat_router
from http_facade.routes.site_routers import AGENTIC_COMMERCE_PREFIXES, SITE_ROUTERS, install_agentic_commerce
from tools import build_registry, build_tenant_registry
from wellknown.mcp import MCP_PATH, mcp_manifest

API_VERSION = "2026-05-18"
log = logging.getLogger("agentgate")


def create_app(
    settings: Settings | None = None, *, clock: Clock | None = None, versions: VersionRegistry | None = None
) -> FastAPI:
    settings = settings or Settings()
    check_deployment(settings)  # shared secrets with a shared database (docs/deployment.md)
    versions = versions or default_versions()  # tests inject deprecated and retired versions
    services = build_services(settings, clock)
    gateway = Gateway(services, current_version=versions.current.name)
    accounts = Accounts(services, gateway)  # registration, mail, passwords, passkeys, SSO
    # /oauth/*; /v1 accepts its access tokens; its JWT-bearer grant checks ID-JAGs as /agent/auth does
    oauth_server = oauth_of(services, gateway, asserted_keys_of(accounts).person)
    # Month-6 and final reminder mails to admins of tenants still pinning a deprecated version.
    reminders = VersionReminders(
        services.db, versions, accounts.box, services.clock, settings.public_base_url
    )
    registry = build_registry(settings)
    site = build_site(services, registry)  # public site API: limits, tokens, jobs, checkout
    billing = build_billing(services, gateway)  # payment provider, its events, trials (docs/billing.md)
    # Agent platforms buy the catalogue over ACP, REST and MCP (docs/agentic-commerce.md).
    commerce = build_commerce(services, site.idempotency)
    # Mail of the site: the newsletter's confirmation links, discovery-call requests and their notices.
    site.subscriptions.mailer = accounts.mailer
    discovery_calls = DiscoveryCalls(
        services.db, services.clock, services.knowledge, accounts.mailer, settings.leads_email
    )
    services.extras["gateway"] = gateway  # the tenant's MCP tools call it (tools/tenant.py)
    company = services.knowledge.pack.company

    def build_mcp() -> Built:  # at the first MCP request (http_facade/routes/mcp_on_demand.py)
        from http_facade.routes import mcp as mcp_routes

        return mcp_routes.build_endpoint(
            registry,
            build_tenant_registry(settings),
            site.services,  # MCP and /api/tools/call: anonymous callers spend the site's budget
            services,
            mcp_events,
            oauth_server.tokens.caller,
            lambda: mcp_manifest(registry, settings, company.name, company.tagline, website=company.website),
        )

    mcp_endpoint = MCPOnDemand(build_mcp)
    # From the start, without the SDK: the content watch reloads a changed pack and announces what
    # changed to every worker's MCP streams and sessions (agent_server/mcp/watch.py).
    mcp_events = build_events(site.services)
    content_watch = ContentWatch(registry, site.services, mcp_events)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if settings.migrate_on_start:
            # Imported here: `agentgate serve` migrates before its workers start and turns this off,
            # which keeps alembic (~10 MB) out of every worker's memory.
            from agent_server.storage.migrate import upgrade

            await anyio.to_thread.run_sync(upgrade, settings)
        async with AsyncExitStack() as stack:
            await stack.enter_async_context(mcp_events.run())
            await stack.enter_async_context(content_watch.run())
            await stack.enter_async_context(mcp_endpoint.running())
            stack.push_async_callback(close_services, services)
            # Plans, first-start admin, usage writer; stopped (usage flushed) before services close.
            await stack.enter_async_context(gateway.running())
            # The mail worker sends what registrations and reminders queued (docs/accounts.md).
            await stack.enter_async_context(accounts.running())
            await stack.enter_async_context(reminders.running())
            # Re-enqueues orphaned jobs, then runs the in-process job worker until shutdown.
            await stack.enter_async_context(site.running())
            # Webhooks subscribe to the event bus; the delivery worker runs until shutdown.
            await stack.enter_async_context(admin_running(services))
            await stack.enter_async_context(billing.running())  # standing scan, period close
            app.state.ready = True
            # Everything built at start lives as long as the app: keep it out of every GC pass (the
            # SDK allocates heavily per MCP request; full passes over the startup heap cost ~30% CPU).
            gc.freeze()
            stack.callback(gc.unfreeze)
            yield

    app = ExactRoutesApp(
        title=f"{company.name} gateway and public API",
        version=API_VERSION,
        summary=company.tagline,
        lifespan=lifespan,
        docs_url=None,  # /docs is a page of its own, served offline (http_facade/pages/docs.py)
        redoc_url=None,
        # FastAPI's native OpenTelemetry checks the global providers on every request (~2 % of the
        # gateway's CPU); the service's metrics are its own (/metrics), so it stays off.
        telemetry={"tracing": False, "metrics": False, "logs": False},
    )
    app.state.services = services
    app.state.registry = registry
    app.state.gateway = gateway
    app.state.files = files = files_for(services)  # /v1/files and the batches' input and output
    app.state.batches, batch_runner = build_batches(gateway, files, site.jobs)  # run by the job workers
    site.housekeeping += [files.purge, batch_runner.resume_stalled]  # expired files, stalled batches
    app.state.accounts = accounts
    app.state.oauth = oauth_server
    app.state.reminders = reminders
    app.state.site = site
    app.state.billing = billing
    app.state.discovery_calls = discovery_calls
    app.state.commerce = commerce
    # Off unless AGENTGATE_RESPONSE_CACHE: then the cached chat and embeddings routes serve /v1.
    app.state.response_cache = ResponseCache.from_settings(settings, services.kv, services.clock)
    app.state.ready = False
    app.state.versions = versions
    app.state.metrics = Metrics()
    install_error_handlers(app, settings.public_base_url.rstrip("/"))

    # The MCP endpoint's two exact routes skip the router (http_facade/exact_routes.py) and come first
    # in it too: reaching them after the gateway's included routers cost a third of a hot MCP call
    # (docs/performance.md, "MCP fast path"). DELETE without sessions is the router's partial match: 405.
    methods = ["GET", "HEAD", "POST", *(["DELETE"] if settings.mcp_sessions else [])]
    for path in (MCP_PATH, f"{MCP_PATH}/"):  # also with a trailing slash: the same answer, not a 307
        app.add_exact_route(MCPRoute(path, endpoint=mcp_endpoint, methods=methods))
    # Then the tenant gateway, the busiest.
    cached = app.state.response_cache is not None
    (gateway_cached if cached else gateway_v1).add_chat_route(app)
    app.include_router(gateway_v1.router)
    embeddings = gateway_cached if cached else gateway_embeddings
    for relayed in (gateway_completions, embeddings, gateway_responses, gateway_messages, gateway_v2):
        app.include_router(relayed.router)
    app.include_router(gateway_files.router)  # /v1/files and /v1/batches (docs/batches.md)
    app.include_router(gateway_batches.router)
    app.include_router(tool_routes.router)
    # The administration API and the pages for people are built at their first request: most
    # workers serve neither (http_facade/deferred_routes.py).
    administration = app.defer(
        "administration", ADMINISTRATION_PREFIXES, lambda app: install_administration(app, settings)
    )
    if renames_connectors(settings):  # checked against the /admin routes at start, not at first use
        administration.build()
    app.include_router(chat_router(settings))  # its token header: <header_prefix>Token
    register.offer_plans(app, services.knowledge.pack.plans)  # only self-serve plans (docs/billing.md)
    for site_router in SITE_ROUTERS:
        app.include_router(site_router)
    app.defer("agentic commerce", AGENTIC_COMMERCE_PREFIXES, install_agentic_commerce)
    app.include_router(wellknown.router)
    app.include_router(probes.router)
    app.include_router(agent_auth.router)
    app.include_router(oauth_routes.router)
    install_billing(app, billing)  # /<billing_path_segment>/... (spec 4.3)
    install_internal_rpc(app, settings, registry, gateway)  # with service credentials only
    app.defer(
        "pages", PAGE_PREFIXES, install_pages
    )  # for people, /docs, /docs/errors, /static (docs/pages.md)
    app.openapi = wellknown.openapi_override(app, settings, versions, services.clock)  # type: ignore[method-assign]

    app.add_middleware(AuditMiddleware, routes_app=app)  # records every /admin/ action
    # CORS, metrics, API-Version and the body limit, in that order, as one middleware.
    app.add_middleware(
        Edge,
        metrics=app.state.metrics,
        routes_app=app,
        versions=versions,
        clock=services.clock,
        base_url=settings.public_base_url.rstrip("/"),
        body_limit=settings.max_request_bytes,
        allowed_origins=settings.allowed_origins,
    )
    return app


def services_of(app: FastAPI) -> Services:
    return app.state.services
